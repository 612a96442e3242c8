"""Which modules replay as the run's own module, before and after each dumping run kept its StableHLO (issue 40),
and what the extra form costs a run.

For each case (a program and the interpreter that runs it), each side (`--before DIR`: an xlatools tree to run as
`python -m xlatools` from DIR, e.g. `git archive main | tar -x -C DIR`; after: this tree) runs the program with
`--preset dump:hlo --preset dump:snapshots`, then `replay BUNDLE --json` (the program's modules, jax's helpers left
out) and counts the modules whose replay compiled the run's own optimised module (`compiled_as_run`), and the form
each was compiled from. Then, on this tree only, the cost: the bytes of jax_ir/ against xla_dump/, and the run's
wall time with the StableHLO written and without it (`--env JAX_DUMP_IR_TO=`), alternated `--runs` times (minimum
of each: a shared machine is noisy).

Usage:
  python benchmarks/stablehlo_form.py --before /tmp/main --jaxlib 0.4.30=$XLATOOLS_CORPUS_0_4_30_PYTHON \\
      [--jaxlib 0.10.2=...] [--program flax_linen_optax ...] [--upstream] [--runs 3] [--text] [--json out.json]
--text also replays each bundle `--from text` on this tree (is the text the run's module, compared as this tree
compares?); the last column is the CPU time jax spends writing the StableHLO in a plain run of the program.
Corpus programs default to the first 7 of tests/corpus/catalog.py; --upstream adds the real upstream cases of the
tests (jaxlib 0.4.26's oneDNN softmax: $XLATOOLS_ONEDNN_JAX_PYTHON; jaxlib 0.6.2's Student-t: $XLATOOLS_MISCOMPILE_
JAX_PYTHON).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from tests.corpus.catalog import PROGRAMS, by_name  # noqa: E402

REDUCE_TESTS = REPO / "tests" / "integration" / "reduce"
UPSTREAM = {  # name: (variable of its interpreter, program, files beside it)
    "onednn_softmax (jaxlib 0.4.26)": ("XLATOOLS_ONEDNN_JAX_PYTHON", REDUCE_TESTS / "onednn_softmax.py", ()),
    "student_t (jaxlib 0.6.2)": ("XLATOOLS_MISCOMPILE_JAX_PYTHON", REDUCE_TESTS / "student_t.py", ()),
}


def cli(tree: Path, args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree), "JAX_PLATFORMS": "cpu"}
    return subprocess.run(
        [sys.executable, "-m", "xlatools", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def dumping_run(tree: Path, python: str, program: Path, env: dict[str, str], work: Path, extra=()) -> dict:
    shutil.copy(program, work / program.name)
    args = ["run", program.name, "--python", python, "--preset", "dump:hlo", "--preset", "dump:snapshots"]
    args += [f"--env={k}={v}" for k, v in env.items()] + list(extra) + ["--out", "runs", "--json"]
    done = cli(tree, args, work)
    if not done.stdout.strip():
        raise SystemExit(f"run of {program.name} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def replayed(tree: Path, python: str, bundle: str, work: Path, *extra: str) -> dict:
    done = cli(tree, ["replay", bundle, "--python", python, "--json", "--out", "replays", *extra], work)
    try:
        modules = json.loads(done.stdout).get("modules") or []
    except ValueError:
        return {"error": done.stderr[-500:]}
    as_run = Counter(str(m.get("compiled_as_run")) for m in modules)
    forms = Counter(((m.get("runs") or [{}])[0].get("loaded_from") or {}).get("kind", "-") for m in modules)
    return {"modules": len(modules), "as_run": dict(as_run), "forms": dict(forms), "exit": done.returncode}


# Run in the target interpreter: the program, with jax's StableHLO dump function timed (CPU seconds of the thread
# that writes it: what writing the form adds to the program, whatever else the machine does).
DUMP_COST = """
import json, os, runpy, sys, time
from jax._src.interpreters import mlir
calls, spent = [0], [0.0]
def timed(module, stage, *args, _dump=mlir.dump_module_to_file, **kwargs):
    start = time.thread_time()
    try:
        return _dump(module, stage, *args, **kwargs)
    finally:
        calls[0] += 1
        spent[0] += time.thread_time() - start
mlir.dump_module_to_file = timed
sys.argv = [sys.argv[1]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    sys.stderr.write("STABLEHLO-COST " + json.dumps({"files": calls[0], "cpu_s": round(spent[0], 4)}) + "\\n")
"""


def dump_cost(python: str, program: Path, env: dict[str, str], work: Path) -> dict:
    """Files jax wrote and the CPU seconds writing them took, in one plain run of the program (no xlatools)."""
    shutil.copy(program, work / program.name)
    full = {**os.environ, **env, "JAX_PLATFORMS": "cpu", "JAX_DUMP_IR_TO": str(work / "jax_ir")}
    done = subprocess.run(
        [python, "-c", DUMP_COST, program.name], cwd=work, env=full, capture_output=True, text=True, timeout=900
    )
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("STABLEHLO-COST ")), None)
    return json.loads(line.split(" ", 1)[1]) if line else {"error": done.stderr[-300:]}


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def case(
    name: str, python: str, program: Path, env: dict[str, str], before: Path | None, runs: int, text_too: bool = False
) -> dict:
    found: dict = {"case": name}
    with tempfile.TemporaryDirectory(prefix="stablehlo-form-") as tmp:
        for side, tree in (("before", before), ("after", REPO)):
            if tree is None:
                continue
            work = Path(tmp) / side
            work.mkdir()
            ran = dumping_run(tree, python, program, env, work)
            bundle = Path(ran["bundle"])
            found[side] = replayed(tree, python, str(bundle), work)
            if side == "after" and text_too:  # the text alone, compared as this tree compares (operands by name)
                found["after_text"] = replayed(tree, python, str(bundle), work, "--from", "text")
            if side == "after":
                found["bytes"] = {
                    "xla_dump": folder_bytes(bundle / "xla_dump"),
                    "jax_ir": folder_bytes(bundle / "jax_ir"),
                }
        work = Path(tmp) / "timing"
        work.mkdir()
        with_form, without = [], []
        for _ in range(runs):  # alternated: machine drift hits both alike
            with_form.append(dumping_run(REPO, python, program, env, work)["duration_s"])
            without.append(dumping_run(REPO, python, program, env, work, ["--env", "JAX_DUMP_IR_TO="])["duration_s"])
        if runs:
            found["seconds"] = {"with": min(with_form), "without": min(without)}
        (Path(tmp) / "cost").mkdir()
        found["writing"] = dump_cost(python, program, env, Path(tmp) / "cost")
    print(json.dumps(found), flush=True)
    return found


def markdown(rows: list[dict]) -> str:
    def as_run(side: dict | None) -> str:
        if not side or "modules" not in side:
            return "-"
        counts = side["as_run"]
        return f"{counts.get('True', 0)}/{side['modules']} ({', '.join(f'{k} {v}' for k, v in side['forms'].items())})"

    out = [
        "| case | modules | as the run's, before (forms) | as the run's, after (forms) | after, --from text | xla_dump | jax_ir | run s with / without | writing it (CPU s, files) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r.get("bytes", {})
        s = r.get("seconds", {})
        out.append(
            f"| {r['case']} | {r.get('after', {}).get('modules', '-')} | {as_run(r.get('before'))} | "
            f"{as_run(r.get('after'))} | {as_run(r.get('after_text'))} | {b.get('xla_dump', 0):,} | "
            f"{b.get('jax_ir', 0):,} | "
            + (f"{s['with']:.2f} / {s['without']:.2f} |" if s else "- |")
            + (f" {w['cpu_s']:.3f} ({w['files']}) |" if "cpu_s" in (w := r.get("writing", {})) else " - |")
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an xlatools tree to compare with (python -m xlatools from it)")
    parser.add_argument("--jaxlib", action="append", default=[], help="LABEL=PYTHON of a corpus venv")
    parser.add_argument("--program", action="append", default=[], help="corpus program (default: the first 7)")
    parser.add_argument("--upstream", action="store_true", help="also the upstream cases of the tests")
    parser.add_argument("--runs", type=int, default=3, help="timing runs of each side (0: no timing)")
    parser.add_argument("--text", action="store_true", help="also replay each bundle --from text (after only)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    programs = by_name(args.program) if args.program else [p for p in PROGRAMS if p.frontend == "jax"][:7]
    rows = []
    for item in args.jaxlib:
        label, _, python = item.partition("=")
        for program in programs:
            rows.append(
                case(
                    f"{program.name} (jaxlib {label})",
                    python,
                    program.path,
                    program.env,
                    args.before,
                    args.runs,
                    args.text,
                )
            )
    if args.upstream:
        for name, (variable, program, _) in UPSTREAM.items():
            python = os.environ.get(variable)
            if python:
                rows.append(case(name, python, program, {}, args.before, args.runs, args.text))
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
