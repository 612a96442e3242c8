"""What does recording traces and persistent-cache outcomes (docs/cache.md) cost a compile-heavy program?
The program of benchmarks/compile_cache_program.py (45 compiles of 40 functions, 900 calls), three ways,
alternating so machine noise hits all alike:

  alone      the program by hand
  metrics    with the run's observer, its compile recording off (XLATOOLS_OBSERVE_COMPILES=0: issue 38's metrics)
  recorded   with the run's observer as `xlatools run` starts it (metrics, traces, cache outcomes, HLO text)

once per persistent-cache mode: off (no folder), cold (every compile a miss, written: key parts and HLO text
recorded), warm (every compile a hit: key parts recorded). Prints the medians of wall and CPU time and the
ratios recorded/metrics (the recording's own cost; goal <= 1.10) and recorded/alone. Usage:
    python benchmarks/compile_record_overhead.py [--runs 5] [--python PATH] [--modes off,cold,warm] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _bench import installed_env, timed

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "compile_cache_program.py"
HOOK = HERE.parent / "xlatools" / "run" / "probes" / "observer"
GOAL = 1.10


def _sides(work: str, mode: str) -> dict[str, dict[str, str]]:
    env = {**installed_env(), "JAX_PLATFORMS": "cpu", "XLATOOLS_BENCH_CACHE": mode}
    env.pop("XLA_FLAGS", None)
    if mode == "warm":
        env["JAX_COMPILATION_CACHE_DIR"] = os.path.join(work, "jax-cache")
    observed = {
        **env,
        "XLATOOLS_OBSERVE_DIR": os.path.join(work, "observer"),
        "XLATOOLS_OBSERVE_CALLS": "20",
        "XLATOOLS_OBSERVE_PYTHONPATH": env.get("PYTHONPATH", ""),
        "PYTHONPATH": os.pathsep.join(p for p in (str(HOOK), env.get("PYTHONPATH", "")) if p),
    }
    return {"alone": env, "metrics": {**observed, "XLATOOLS_OBSERVE_COMPILES": "0"}, "recorded": observed}


def _measure(args, mode: str) -> dict:
    work = tempfile.mkdtemp(prefix="xlatools-bench-")
    sides = _sides(work, mode)
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    argv = [args.python, str(PROGRAM)]
    try:
        for round_ in range(args.runs + 1):  # the first round warms file caches and the warm mode's entries
            for name, env in sides.items():
                shutil.rmtree(os.path.join(work, "observer"), ignore_errors=True)
                os.makedirs(os.path.join(work, "observer"))
                seconds = timed(argv, env=env, cwd=work, cpu=cpu[name] if round_ else None)
                if round_:
                    wall[name].append(seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ratio(a: str, b: str) -> dict[str, float]:
        return {
            "wall": round(statistics.median(wall[a]) / statistics.median(wall[b]), 3),
            "cpu": round(statistics.median(cpu[a]) / statistics.median(cpu[b]), 3),
        }

    return {
        "mode": mode,
        "runs": args.runs,
        "wall_median_s": {k: round(statistics.median(v), 3) for k, v in wall.items()},
        "cpu_median_s": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
        "ratios": {"recorded/metrics": ratio("recorded", "metrics"), "recorded/alone": ratio("recorded", "alone")},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per side (at least 5)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with jax that runs the program")
    parser.add_argument("--modes", default="off,cold,warm", help="persistent-cache modes, comma-separated")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    results = [_measure(args, mode) for mode in args.modes.split(",")]
    if args.json:
        print(json.dumps({"goal": GOAL, "python": args.python, "results": results}, indent=2))
        return 0
    for result in results:
        medians = ", ".join(f"{k} {v:.3f} s" for k, v in result["cpu_median_s"].items())
        print(f"cache {result['mode']}: CPU medians {medians}")
        for name, value in result["ratios"].items():
            print(f"  {name:17s} wall {value['wall']:.3f}  CPU {value['cpu']:.3f}")
    print(f"goal: recorded/metrics <= {GOAL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
