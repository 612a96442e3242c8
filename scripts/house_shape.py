#!/usr/bin/env python3
"""The shape of the xlatools package: layers, import cycles, module and function sizes.

    python3 scripts/house_shape.py [PACKAGE_DIR]      (default: xlatools/ beside this script)

Layers, top to bottom: the CLI (cli.py, commands/), the capabilities (one folder each),
and the shared modules at the top of the package. An import may point down or sideways
only where ALLOWED says so; every import counts, also the lazy ones inside functions.
Also: no `sys.argv` outside cli.py and __main__.py (commands get their command line from the CLI); no
writes to stdout/stderr in capability modules (they report through the Reporter their
command hands them); at most MAX_LOOSE_DICTS `dict[str, Any]`-like annotations outside
the target-side scripts, each explained by a comment on its line.
Exit 1 when a rule is broken, so CI can run it.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

CLI = {"cli", "commands", "__main__"}
SHARED = {
    "errors",
    "console",
    "fsutil",
    "bundle",
    "proctree",
    "bazelrc",
    "debuginfo",
    "vocab",
    "redact",
    "records",
    "yamlfile",
    "hlo",
    "search",
    "__init__",
}  # hlo: HLO text and dump-name grammars; search: ddmin, K-ary (pure)
SHARED |= {"gitcmd", "crashlog"}  # the one git runner; the crash log of a bug of ours
# capability -> the capabilities it may use (besides the shared modules).
ALLOWED = {
    "profiles": set(),
    "pin": {"profiles"},
    "run": {"profiles", "debug", "cluster"},  # debug.crash: native backtraces; cluster: runs as Slurm jobs
    "cluster": {"profiles"},  # the executor: a profile's cluster: section
    "remote": set(),
    "builder": {"profiles", "pin", "remote"},
    "replay": {"run", "profiles", "debug"},
    "debug": {"profiles"},
    "compare": {"run", "replay"},
    "doctor": {"run", "builder", "pin", "profiles", "remote", "debug", "cluster"},
    "bisect": {"run", "replay", "compare", "builder", "pin", "profiles", "cluster"},
    "reduce": {"run", "replay", "bisect", "debug"},  # debug.crash: the reduced module's native backtrace
    "triage": {"run", "replay", "compare", "bisect", "reduce", "debug"},  # debug.crash: a crash's top frames
}
SHARED_MAY_USE = {"bazelrc": {"profiles"}, "debuginfo": {"profiles"}}  # they render or check a profile
MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 60
MAX_LOOSE_DICTS = 20
# Where output may be written: the CLI layer and the console module itself.
MAY_WRITE = CLI | {"console"}
_LOOSE_DICT = re.compile(
    r"^(?:typing\.)?(?:dict|Dict|Mapping|MutableMapping)(?:\[str, *(?:typing\.)?(?:Any|object)\])?$"
)


def part_of(module: str) -> str:
    """`xlatools.run.plan` -> `run`; `xlatools.errors` -> `errors`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path, module: str, is_package: bool) -> list[tuple[str, int, bool]]:
    """(imported xlatools module, line, lazy) for every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            if name.startswith("xlatools."):
                found.append((name, node.lineno, id(node) not in top_level))
    return found


def target_side(module: str) -> bool:
    """Scripts run in the target interpreter (probes, smoke programs): they speak JSON, untyped by nature."""
    return "probes" in module.split(".") or "smoke" in module.split(".")


def loose_dicts(path: Path) -> list[tuple[int, bool]]:
    """(line, explained) for each `dict[str, Any]`-like annotation: explained = a comment on its line."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]
            annotations = [a.annotation for a in args if a is not None and a.annotation is not None] + [node.returns]
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        for annotation in annotations:
            if annotation is None:
                continue
            parts = [annotation.left, annotation.right] if isinstance(annotation, ast.BinOp) else [annotation]
            if any(_LOOSE_DICT.match(ast.unparse(part).replace("'", "")) for part in parts):
                line = annotation.lineno
                explained = "#" in lines[line - 1] or "#" in lines[annotation.end_lineno - 1]
                found.append((line, explained))
    return found


def output_writes(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each direct write to the terminal or use of sys.argv."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            name = f"{node.value.id}.{node.attr}"
            if name in (
                "sys.stdout",
                "sys.stderr",
                "sys.argv",
                "typer.echo",
                "console.out",
                "console.err",
                "console.info",
                "console.warn",
                "console.step",
                "console.error",
                "console.group",
            ):
                found.append((node.lineno, name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append((node.lineno, "print"))
    return found


def function_sizes(path: Path) -> list[tuple[str, int, int]]:
    tree = ast.parse(path.read_text(), str(path))
    # The body only: a CLI command's option declarations are data, not logic.
    return [
        (node.name, node.lineno, node.end_lineno - node.body[0].lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "xlatools"
    modules = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        modules[name] = path
    problems: list[str] = []
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        if target_side(module):
            continue  # scripts for the target interpreter: they import nothing of ours
        source = part_of(module)
        for target, line, lazy in imports_of(path, module, path.name == "__init__.py"):
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target not in modules or target == module:
                continue
            if not lazy:
                edges[module].add(target)
            dest = part_of(target)
            if dest == source or dest in SHARED - SHARED_MAY_USE.keys() or source in CLI:
                continue
            if source in SHARED:
                allowed = SHARED_MAY_USE.get(source, set()) | SHARED
            elif dest in CLI:
                allowed = set()
            else:
                allowed = ALLOWED.get(source, set()) | SHARED
            if dest not in allowed:
                problems.append(f"{path}:{line}: {module} imports {target} ({source} -> {dest} is not allowed)")
    problems += [f"cycle: {' -> '.join(cycle)}" for cycle in cycles(edges)]
    loose = []
    for module, path in modules.items():
        if target_side(module):
            continue
        part = part_of(module)
        for line, what in output_writes(path):
            if what == "sys.argv" and module not in ("xlatools.cli", "xlatools.__main__"):  # the program's entry
                problems.append(f"{path}:{line}: sys.argv outside cli.py (commands get it from options.invocation())")
            elif what != "sys.argv" and part not in MAY_WRITE:
                problems.append(f"{path}:{line}: {what} in a capability module (report through the Reporter)")
        loose += [(path, line, explained) for line, explained in loose_dicts(path)]
    problems += [
        f"{path}:{line}: dict[str, Any]-like annotation without a comment saying why"
        for path, line, explained in loose
        if not explained
    ]
    if len(loose) > MAX_LOOSE_DICTS:
        problems.append(f"{len(loose)} dict[str, Any]-like annotations (at most {MAX_LOOSE_DICTS}): use typed records")
    sizes = sorted(((len(p.read_text().splitlines()), m) for m, p in modules.items()), reverse=True)
    problems += [f"{modules[m]}: {n} lines (over {MAX_MODULE_LINES})" for n, m in sizes if n > MAX_MODULE_LINES]
    long_functions = [
        (n, f"{modules[m]}:{line} {name}")
        for m in modules
        for name, line, n in function_sizes(modules[m])
        if n > MAX_FUNCTION_LINES
    ]
    print(f"modules: {len(modules)}, largest: " + ", ".join(f"{m} ({n})" for n, m in sizes[:3]))
    print(f"dict[str, Any]-like annotations: {len(loose)} (at most {MAX_LOOSE_DICTS})")
    for n, where in sorted(long_functions, reverse=True):
        print(f"long function: {where}: {n} lines (over {MAX_FUNCTION_LINES}; say why in a comment or split it)")
    for problem in problems:
        print(problem)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (module-level imports only)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


if __name__ == "__main__":
    sys.exit(main())
