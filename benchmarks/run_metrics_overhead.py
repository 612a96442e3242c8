"""What do xlatools' metrics cost a program? A program of 1,000 small jitted calls (ten functions, 100 calls
each: benchmarks/many_calls_program.py), four ways, alternating so machine noise hits all alike:

  alone      the program by hand
  observed   the program by hand with the observer in its interpreter (what `run` adds for metrics)
  run        `xlatools run PROGRAM` (metrics on: the default)
  run-off    `xlatools run --no-metrics PROGRAM`

Prints the medians of wall and CPU time (user + system, children included) and the ratios observed/alone
and run/run-off (the metrics' own cost; goal <= 1.10) and run/alone (the tool and the metrics together).
Measured (docs/metrics.md has the table): on 2 loaded cores, jax 0.10.2, the default budget gives
observed/alone 0.99 wall and 1.035 CPU, run/run-off 1.06 wall and 1.07 CPU; `--measure-calls all` 1.57/1.43
and 1.11/1.20. Usage:
    python benchmarks/run_metrics_overhead.py [--runs 7] [--python PATH] [--measure-calls N|all] [--program FILE.py]
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
PROGRAM = HERE / "many_calls_program.py"
HOOK = HERE.parent / "xlatools" / "run" / "probes" / "observer"
GOAL = 1.10


def _sides(args, work: str, env: dict[str, str]) -> dict[str, tuple[list[str], dict[str, str]]]:
    tool = [sys.executable, "-m", "xlatools", "run", args.program, "--python", args.python, "--quiet"]
    tool += ["--out", os.path.join(work, "artifacts")]
    observed_env = {
        **env,
        "XLATOOLS_OBSERVE_DIR": os.path.join(work, "observer"),
        "XLATOOLS_OBSERVE_CALLS": args.measure_calls.replace("all", "-1"),
        "XLATOOLS_OBSERVE_PYTHONPATH": env.get("PYTHONPATH", ""),
        "PYTHONPATH": os.pathsep.join(p for p in (str(HOOK), env.get("PYTHONPATH", "")) if p),
    }
    os.makedirs(observed_env["XLATOOLS_OBSERVE_DIR"], exist_ok=True)
    return {
        "alone": ([args.python, args.program], env),
        "observed": ([args.python, args.program], observed_env),
        "run": (tool + ["--measure-calls", args.measure_calls], env),
        "run-off": (tool + ["--no-metrics"], env),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="alternating runs per side (at least 5)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with jax that runs the program")
    parser.add_argument("--measure-calls", default="20", help="the observer's budget (run's --measure-calls)")
    parser.add_argument("--program", default=str(PROGRAM), help="the program (default: 1,000 small jitted calls)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    args.program = os.path.abspath(args.program)
    work = tempfile.mkdtemp(prefix="xlatools-bench-")
    env = {**installed_env(), "JAX_PLATFORMS": "cpu", "NO_COLOR": "1", "XLATOOLS_CACHE_DIR": os.path.join(work, "c")}
    env.pop("XLA_FLAGS", None)
    sides = _sides(args, work, env)
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for argv, side_env in sides.values():  # warm-up: file caches, the one-time target probe
            timed(argv, env=side_env, cwd=work)
        for _ in range(args.runs):
            for name, (argv, side_env) in sides.items():
                wall[name].append(timed(argv, env=side_env, cwd=work, cpu=cpu[name]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = _result(args, wall, cpu)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name in sides:
            print(
                f"{name:9s} wall median {result['wall_median_s'][name]:.3f} s, CPU median {result['cpu_median_s'][name]:.3f} s"
            )
        for ratio, value in result["ratios"].items():
            print(f"{ratio:16s} wall {value['wall']:.3f}  CPU {value['cpu']:.3f}  fastest runs {value['fastest']:.3f}")
        print(f"goal: observed/alone and run/run-off <= {GOAL}")
    return 0


def _result(args, wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> dict:
    def ratio(a: str, b: str) -> dict[str, float]:
        return {
            "wall": round(statistics.median(wall[a]) / statistics.median(wall[b]), 3),
            "cpu": round(statistics.median(cpu[a]) / statistics.median(cpu[b]), 3),
            "fastest": round(min(wall[a]) / min(wall[b]), 3),
        }

    return {
        "program": args.program,
        "python": args.python,
        "measure_calls": args.measure_calls,
        "runs": args.runs,
        "goal": GOAL,
        "wall_median_s": {k: round(statistics.median(v), 3) for k, v in wall.items()},
        "cpu_median_s": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
        "ratios": {
            "observed/alone": ratio("observed", "alone"),
            "run/run-off": ratio("run", "run-off"),
            "run/alone": ratio("run", "alone"),
        },
        "wall_s": {k: [round(t, 3) for t in v] for k, v in wall.items()},
    }


if __name__ == "__main__":
    sys.exit(main())
