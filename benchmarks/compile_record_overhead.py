"""What does recording traces and persistent-cache outcomes cost a compile-heavy program? The program of
benchmarks/compile_cache_program.py (45 compiles of 40 functions, 900 calls) measured as
benchmarks/run_metrics_overhead.py measures (alone, observed, run, run --no-metrics; alternating), once per
persistent-cache mode: off (no folder), cold (every compile a miss, written: key parts and HLO text recorded),
warm (every compile a hit: key parts recorded). Goal: run/run-off <= 1.10 in each mode (docs/cache.md has the
numbers). Usage:
    python benchmarks/compile_record_overhead.py [--runs 5] [--python PATH] [--modes off,cold,warm] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from _bench import installed_env, timed
from run_metrics_overhead import GOAL, _result, _sides

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "compile_cache_program.py"


def _measure(args, mode: str) -> dict:
    work = tempfile.mkdtemp(prefix="xlatools-bench-")
    env = {**installed_env(), "JAX_PLATFORMS": "cpu", "NO_COLOR": "1", "XLATOOLS_CACHE_DIR": os.path.join(work, "c")}
    env.pop("XLA_FLAGS", None)
    env["XLATOOLS_BENCH_CACHE"] = mode
    if mode == "warm":
        env["JAX_COMPILATION_CACHE_DIR"] = os.path.join(work, "jax-cache")
    sides = _sides(args, work, env)
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for argv, side_env in sides.values():  # warm-up: file caches, the target probe, the warm cache's entries
            timed(argv, env=side_env, cwd=work)
        for _ in range(args.runs):
            for name, (argv, side_env) in sides.items():
                wall[name].append(timed(argv, env=side_env, cwd=work, cpu=cpu[name]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"mode": mode, **_result(args, wall, cpu)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per side (at least 5)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with jax that runs the program")
    parser.add_argument("--modes", default="off,cold,warm", help="persistent-cache modes, comma-separated")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    args.program, args.measure_calls = str(PROGRAM), "20"
    results = [_measure(args, mode) for mode in args.modes.split(",")]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for result in results:
        print(f"cache {result['mode']}:")
        for ratio, value in result["ratios"].items():
            print(f"  {ratio:16s} wall {value['wall']:.3f}  CPU {value['cpu']:.3f}  fastest runs {value['fastest']:.3f}")
    print(f"goal: run/run-off <= {GOAL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
