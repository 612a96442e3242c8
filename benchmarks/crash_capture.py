"""What crash capture (native backtraces) costs a run that does not crash.

Two measurements, each side alternating with the other so machine noise hits both alike:
1. start-up: `python -c pass` with and without the hook's environment (the whole fixed cost:
   a sitecustomize, ctypes, sigaction, one fork for the watcher);
2. a real run: `xlatools run` of the seed program with XLATOOLS_NATIVE_BACKTRACE=0 and with it on.
Prints medians and ratios (goal for 2: <= 1.02, i.e. nothing measurable next to the run's noise).
Usage:
    python benchmarks/crash_capture.py [--runs 7] [--python PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _bench import installed_env, timed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
SEED = Path(__file__).resolve().parent / "seed_program.py"


def main() -> int:
    from xlatools.debug.crash import with_crash_capture

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="xlatools-bench-crash-"))
    env = {**installed_env(), "JAX_PLATFORMS": "cpu", "XLATOOLS_CACHE_DIR": str(work / "cache")}
    hooked = with_crash_capture(env, work)
    plain_start, hooked_start = _startups(args.python, env, hooked, args.runs * 3)
    xlatools = [sys.executable, "-m", "xlatools", "run", str(SEED), "--out", str(work / "out"), "--quiet"]
    off, on = _runs(xlatools, env, args.runs)
    result = {
        "startup_without_s": _median(plain_start), "startup_with_s": _median(hooked_start),
        "startup_cost_ms": round((_median(hooked_start) - _median(plain_start)) * 1000, 1),
        "run_without_s": _median(off), "run_with_s": _median(on), "run_ratio": round(_median(on) / _median(off), 3),
        "run_ratio_of_minimums": round(min(on) / min(off), 3), "runs": args.runs, "goal": 1.02,
    }
    print(json.dumps(result, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))
    return 0


def _startups(python: str, env: dict, hooked: dict, runs: int) -> tuple[list[float], list[float]]:
    a, b = [], []
    for _ in range(runs):
        a.append(timed([python, "-c", "pass"], env=env))
        b.append(timed([python, "-c", "pass"], env=hooked))
    return a, b


def _runs(argv: list[str], env: dict, runs: int) -> tuple[list[float], list[float]]:
    off_env = {**env, "XLATOOLS_NATIVE_BACKTRACE": "0"}
    a, b = [], []
    for _ in range(runs):
        a.append(timed(argv, env=off_env))
        b.append(timed(argv, env=env))
    return a, b


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


if __name__ == "__main__":
    sys.exit(main())
