"""Reduce benchmark: ddmin alone vs the full strategy on real modules with a planted wrong result.

Cases (each a real program dumped by a real run, then `xlatools reduce` as a user runs it):
  student_t  tests/integration/reduce/student_t.py, 158 instructions, float64; the bug: jaxlib 0.6.2
             (--bad-python) computes exp of a constant-folded NaN as garbage; reference: this interpreter.
  solve      tests/integration/reduce/solve.py (LAPACK custom calls), 124 instructions; oracle --script:
             the candidate still holds a tanh (a cheap oracle, so the search itself is what is measured).
Prints instructions before/after, oracle calls, candidates, wall time, and the ratios full/ddmin.

Usage: python benchmarks/reduce.py --bad-python PATH_TO_JAXLIB_0.6.2_PYTHON [--jobs N]
       (scripts/make-jax-venv.sh DIR 0.6.2 makes one; without it only the solve case runs)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = REPO / "tests" / "integration" / "reduce"


def xlatools(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xlatools", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )


def dump(work: Path, program: str, python: str) -> Path:
    shutil.copy(PROGRAMS / program, work / program)
    result = xlatools("run", program, "--python", python, "--preset", "dump:hlo", "--out", f"runs-{program}", cwd=work)
    if result.returncode:
        sys.exit(f"dumping {program} failed:\n{result.stderr[-2000:]}")
    return next(p for p in sorted((work / f"runs-{program}").iterdir()) if p.is_dir() and not p.is_symlink())


def reduce(work: Path, bundle: Path, oracle: list[str], strategy: str, jobs: int) -> dict:
    started = time.perf_counter()
    result = xlatools(
        "reduce",
        str(bundle),
        *oracle,
        "--strategy",
        strategy,
        "--jobs",
        str(jobs),
        "--fresh",
        "--rechecks",
        "1",
        "--out",
        f"out-{strategy}",
        "--json",
        cwd=work,
    )
    wall = time.perf_counter() - started
    if result.returncode:
        sys.exit(f"reduce ({strategy}) failed:\n{result.stderr[-2000:]}")
    return {**json.loads(result.stdout), "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bad-python", help="a Python with jax/jaxlib 0.6.2")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="xlatools-bench-reduce-"))
    script = work / "has_tanh.sh"
    script.write_text('#!/bin/sh\ngrep -q " tanh(" "$1" && exit 1\nexit 0\n')
    script.chmod(0o755)
    cases = [("solve", dump(work, "solve.py", sys.executable), ["--module", "jit_f", "--script", str(script)])]
    if args.bad_python:
        cases.insert(
            0,
            (
                "student_t",
                dump(work, "student_t.py", args.bad_python),
                ["--python", args.bad_python, "--reference-python", sys.executable],
            ),
        )
    print(
        f"{'case':10} {'strategy':8} {'before':>6} {'after':>5} {'oracle calls':>12} {'candidates':>10} {'wall s':>7}"
    )
    for name, bundle, oracle in cases:
        rows = {s: reduce(work, bundle, oracle, s, args.jobs) for s in ("ddmin", "full")}
        for strategy, r in rows.items():
            print(
                f"{name:10} {strategy:8} {r['instructions_before']:>6} {r['instructions_after']:>5} "
                f"{r['oracle_calls']:>12} {r['candidates']:>10} {r['wall']:>7.1f}"
            )
        d, f = rows["ddmin"], rows["full"]
        print(
            f"{name:10} full/ddmin: instructions left {f['instructions_after'] / max(1, d['instructions_after']):.2f}, "
            f"oracle calls {f['oracle_calls'] / max(1, d['oracle_calls']):.2f}, wall {f['wall'] / d['wall']:.2f}"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
