"""What crash capture (native backtraces) costs a run that does not crash.

Three measurements, each side alternating with the other so machine noise hits both alike:
1. start-up: `python -c pass` with and without the hook's environment (the whole fixed cost in
   the program: a sitecustomize, _ctypes, five sigaction calls, one posix_spawn of the watcher,
   a shell waiting in `read`);
2. `xlatools run` of an empty program, XLATOOLS_NATIVE_BACKTRACE=0 vs on (where start-up shows most);
3. `xlatools run` of the seed program, off vs on.
Prints wall-time medians, CPU seconds (user+system, children included: steadier on a shared
machine) and ratios (goal for 2 and 3: <= 1.02, i.e. nothing measurable next to the run's noise).
The watcher is a process of its own beside the program (not waited for, so in no CPU figure
above; 2 and 3 show what it costs a run's wall time): its start-up is printed too, as `sh -c :`.
Usage:
    python benchmarks/crash_capture.py [--runs 11] [--python PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
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
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="xlatools-bench-crash-"))
    (work / "empty.py").write_text("")
    env = {**installed_env(), "JAX_PLATFORMS": "cpu", "XLATOOLS_CACHE_DIR": str(work / "cache")}
    off = {**env, "XLATOOLS_NATIVE_BACKTRACE": "0"}
    result = {"runs": args.runs, "goal": 1.02}
    bare = [args.python, "-c", "pass"]
    try:
        result["startup"] = _compare(bare, env, bare, with_crash_capture(env, work), args.runs * 3)
        result["watcher"] = _compare(bare, env, ["/bin/sh", "-c", ":"], env, args.runs * 3)
        for label, program in (("empty_run", work / "empty.py"), ("seed_run", SEED)):
            xlatools = [
                sys.executable,
                "-m",
                "xlatools",
                "run",
                str(program),
                "--python",
                args.python,
                "--out",
                str(work / "out"),
                "--quiet",
            ]
            _compare(xlatools, off, xlatools, env, 1)  # warm-up: the target probe's cache, file caches
            result[label] = _compare(xlatools, off, xlatools, env, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        watcher = result.pop("watcher")
        print(
            f"watcher    start-up of its own (beside the program): {watcher['on_ms']:.1f} ms, "
            f"CPU {watcher['cpu_on_ms']:.1f} ms"
        )
        for label in ("startup", "empty_run", "seed_run"):
            row = result[label]
            print(
                f"{label:9}  off {row['off_ms']:8.1f} ms  on {row['on_ms']:8.1f} ms  cost {row['cost_ms']:6.1f} ms  "
                f"ratio {row['ratio']:.3f}  (CPU {row['cpu_off_ms']:.1f} -> {row['cpu_on_ms']:.1f} ms, "
                f"ratio {row['cpu_ratio']:.3f})"
            )
    return 0


def _compare(
    off_argv: list[str], off_env: dict[str, str], on_argv: list[str], on_env: dict[str, str], runs: int
) -> dict[str, float]:
    """Medians of wall and CPU time of both sides, alternating run by run."""
    cpu: tuple[list[float], list[float]] = ([], [])
    off, on = [], []
    for _ in range(runs):
        off.append(timed(off_argv, env=off_env, cpu=cpu[0]))
        on.append(timed(on_argv, env=on_env, cpu=cpu[1]))
    ms = lambda values: round(statistics.median(values) * 1000, 1)  # noqa: E731
    return {
        "off_ms": ms(off),
        "on_ms": ms(on),
        "cost_ms": round(ms(on) - ms(off), 1),
        "ratio": round(statistics.median(on) / statistics.median(off), 3),
        "ratio_of_minimums": round(min(on) / min(off), 3),
        "cpu_off_ms": ms(cpu[0]),
        "cpu_on_ms": ms(cpu[1]),
        "cpu_ratio": round(statistics.median(cpu[1]) / statistics.median(cpu[0]), 3),
    }


if __name__ == "__main__":
    sys.exit(main())
