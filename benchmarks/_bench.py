"""Shared by the benchmark scripts: timing, and running xlatools as installed.

`pip install` compiles a package's bytecode; an editable checkout run with
PYTHONDONTWRITEBYTECODE=1 (as some sandboxes and CI runners set) compiles every
xlatools module from source on every start, which is not what users pay.
`installed_env` precompiles once and lets the children use the bytecode.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "xlatools"


def installed_env(env: dict[str, str] | None = None) -> dict[str, str]:
    compileall.compile_dir(str(PACKAGE), quiet=1)
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(argv: list[str], check: bool = True, cpu: list[float] | None = None, **kwargs) -> float:
    """Wall-clock seconds of one run of `argv`, output discarded. With `cpu`, also appends the CPU
    seconds (user + system) of the process and its waited-for children: steadier on a shared machine."""
    import resource

    kwargs.setdefault("stdout", subprocess.DEVNULL)
    kwargs.setdefault("stderr", subprocess.DEVNULL)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=check, **kwargs)
    wall = time.perf_counter() - start
    if cpu is not None:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall


def alternate(
    first: list[str], second: list[str], runs: int, cpu: tuple[list[float], list[float]] | None = None, **kwargs
) -> tuple[list[float], list[float]]:
    """Wall times of `runs` runs of each command, alternating, so machine drift hits both alike.
    With `cpu` (two lists), the CPU seconds of each run are appended to them as well."""
    a, b = [], []
    for _ in range(runs):
        a.append(timed(first, cpu=cpu[0] if cpu else None, **kwargs))
        b.append(timed(second, cpu=cpu[1] if cpu else None, **kwargs))
    return a, b


def cpu_line(label: str, first: list[float], second: list[float]) -> tuple[float, str]:
    """The ratio of the CPU-time medians and a line saying so: on a shared, loaded machine CPU
    seconds move far less than wall time, so both are printed."""
    import statistics

    ratio = statistics.median(second) / statistics.median(first)
    return ratio, (
        f"CPU seconds (user+system, children included): median {label} {statistics.median(first):.3f} vs "
        f"{statistics.median(second):.3f}, ratio {ratio:.3f}"
    )


def report_ratio(hand_times: list[float], tool_times: list[float], goal: float, as_json: bool, **extra) -> dict:
    """Print (or print as JSON) the medians of both sides and their ratio; returns the result."""
    import json
    import statistics

    hand, tool = statistics.median(hand_times), statistics.median(tool_times)
    result = {
        **extra,
        "runs": len(hand_times),
        "by_hand_median_s": round(hand, 3),
        "xlatools_median_s": round(tool, 3),
        "ratio": round(tool / hand, 3),
        "goal": goal,
        # On a shared machine the fastest runs show the intrinsic cost best; reported beside the medians.
        "ratio_of_minimums": round(min(tool_times) / min(hand_times), 3),
        "by_hand_s": [round(t, 3) for t in hand_times],
        "xlatools_s": [round(t, 3) for t in tool_times],
    }
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(f"by hand:  median {hand:.3f} s  {result['by_hand_s']}")
        print(f"xlatools: median {tool:.3f} s  {result['xlatools_s']}")
        print(
            f"ratio {result['ratio']:.3f} (goal <= {goal}); fixed cost {tool - hand:.3f} s per run; "
            f"ratio of the fastest runs {result['ratio_of_minimums']:.3f}"
        )
    return result


XEINSUM_CHECK = "import jax.lax\njax.lax.xeinsum  # removed in jax 0.4.31\n"  # the bisect tests' fixture test


def release_bisection(work: Path, env: dict[str, str], good: str, bad: str, *extra: str) -> tuple[float, dict]:
    """One `xlatools bisect releases --good G --bad B --json EXTRA -- check.py` in `work` (check.py is the
    fixture's test): (wall seconds, its JSON). A failed bisection ends the benchmark with its stderr."""
    import json
    import sys

    (work / "check.py").write_text(XEINSUM_CHECK)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "xlatools",
            "bisect",
            "releases",
            "--good",
            good,
            "--bad",
            bad,
            "--json",
            *extra,
            "--",
            "check.py",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stderr[-3000:])
        raise SystemExit(f"bisection {' '.join(extra)} failed (exit {done.returncode})")
    return wall, json.loads(done.stdout)
