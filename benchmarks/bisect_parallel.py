"""Parallel bisection (`bisect releases --jobs K`): steps, rounds and wall time for K = 1, 2, 4.

1. Synthetic histories (the real engine, plain callables): rounds (what wall time follows when steps
   cost alike) and steps (what the machine pays) per K, every boundary of N candidates.
2. The real release bisection of the tests' fixture (jax 0.4.28..0.4.31, `jax.lax.xeinsum` removed in
   0.4.31), each K in turn (alternating order between repeats, so machine drift hits all alike):
   - cold: an empty xlatools cache per run (every release environment installed by uv, every new
     interpreter probed); uv's own package cache as this machine has it, or empty with --cold-uv-cache
     (then every wheel is downloaded: about 4 x 80 MB per run);
   - warm: every environment cached (--cache, default the CI's bisect cache when it exists).
   Every run is a new bisection (its own work folder), so every step runs.

Usage: python benchmarks/bisect_parallel.py [--repeats 2] [--jobs 1 2 4] [--cache DIR] [--cold-uv-cache]
       [--synthetic-only] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository's packages

from benchmarks._bench import installed_env, release_bisection  # noqa: E402
from xlatools.bisect.engine import Oracle, StepVerdict  # noqa: E402
from xlatools.bisect.kary import bisect_kary, one_at_a_time  # noqa: E402

GOOD, BAD = "0.4.28", "0.4.31"
CI_CACHE = Path.home() / ".cache" / "xlatools-ci" / "bisect-envs"


def synthetic(jobs: list[int]) -> list[dict]:
    rows = []
    print("synthetic histories: rounds (wall time when steps cost alike) and steps, every boundary")
    print(f"{'N':>5} {'K':>3} {'rounds mean':>12} {'rounds max':>11} {'steps mean':>11} {'steps max':>10}")
    for n in (4, 16, 64, 256):
        for k in jobs:
            rounds, steps = [], []
            for first_bad in range(1, n):
                batches: list[int] = []
                recorded: list = []

                def step(key: str, label: str, first_bad=first_bad) -> StepVerdict:
                    return StepVerdict("bad" if int(key) >= first_bad else "good")

                def run_batch(calls, step=step, batches=batches):
                    batches.append(len(calls))
                    yield from one_at_a_time(step)(calls)

                keys = [str(i) for i in range(n)]
                bisect_kary(keys, keys, Oracle(recorded, step, lambda r: None, lambda: ""), run_batch, k)
                rounds.append(len(batches) if k > 1 else len(recorded))
                steps.append(len(recorded))
            row = {
                "n": n,
                "k": k,
                "rounds_mean": round(statistics.mean(rounds), 2),
                "rounds_max": max(rounds),
                "steps_mean": round(statistics.mean(steps), 2),
                "steps_max": max(steps),
            }
            rows.append(row)
            print(
                f"{n:>5} {k:>3} {row['rounds_mean']:>12} {row['rounds_max']:>11} {row['steps_mean']:>11} "
                f"{row['steps_max']:>10}"
            )
    return rows


def rounds_of(steps: list[dict]) -> int:
    """Rounds as the steps ran them: a step that starts after every earlier step finished opens one."""

    def when(stamp: str) -> datetime:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    count, last_end = 0, None
    for step in sorted(steps, key=lambda s: when(s["started"])):
        if last_end is None or when(step["started"]) >= last_end:
            count += 1
        end = when(step["finished"])
        last_end = end if last_end is None or end > last_end else last_end
    return count


def one_bisection(k: int, cache: Path, uv_cache: Path | None) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"xlatools-bench-k{k}-"))
    env = installed_env()
    env.update({"XLATOOLS_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"})
    if uv_cache is not None:
        env["UV_CACHE_DIR"] = str(uv_cache)
    wall, data = release_bisection(work, env, GOOD, BAD, "--jobs", str(k))
    summary = data["summary"]
    return {
        "k": k,
        "wall_s": round(wall, 2),
        "steps": summary["steps"],
        "rounds": rounds_of(data["steps"]),
        "installs": sum(1 for s in summary["per_step"] if s["install_s"] > 0),
        "install_s": summary["install_s"],
        "run_s": summary["run_s"],
        "first_bad": data["result"]["first_bad"]["label"],
    }


def real(jobs: list[int], repeats: int, warm_cache: Path, cold_uv_cache: bool) -> list[dict]:
    runs: list[dict] = []
    scratch = Path(tempfile.mkdtemp(prefix="xlatools-bench-caches-"))
    one_bisection(1, warm_cache, None)  # makes sure the warm cache holds every environment (untimed)
    for repeat in range(repeats):
        order = jobs if repeat % 2 == 0 else list(reversed(jobs))
        for k in order:
            cold = scratch / f"cold-{repeat}-{k}"
            uv = scratch / f"uv-{repeat}-{k}" if cold_uv_cache else None
            runs.append({"mode": "cold", **one_bisection(k, cold, uv)})
            runs.append({"mode": "warm", **one_bisection(k, warm_cache, None)})
            for entry in runs[-2:]:
                print(
                    f"  repeat {repeat + 1} {entry['mode']:<4} K={k}: {entry['wall_s']:6.1f} s, {entry['steps']} steps "
                    f"in {entry['rounds']} rounds, {entry['installs']} installs ({entry['install_s']:.1f} s), "
                    f"run {entry['run_s']:.1f} s, first bad {entry['first_bad']}",
                    flush=True,
                )
    return runs


def table(runs: list[dict], jobs: list[int]) -> list[dict]:
    rows = []
    print(
        f"\n{'mode':<5} {'K':>3} {'wall s (median)':>16} {'speed-up':>9} {'steps':>6} {'rounds':>7} "
        f"{'install s':>10} {'run s':>7}  walls"
    )
    for mode in ("cold", "warm"):
        base = None
        for k in jobs:
            mine = [r for r in runs if r["mode"] == mode and r["k"] == k]
            wall = statistics.median(r["wall_s"] for r in mine)
            base = base or wall
            row = {
                "mode": mode,
                "k": k,
                "wall_median_s": round(wall, 2),
                "speedup": round(base / wall, 2),
                "steps": statistics.median(r["steps"] for r in mine),
                "rounds": statistics.median(r["rounds"] for r in mine),
                "install_s": round(statistics.median(r["install_s"] for r in mine), 1),
                "run_s": round(statistics.median(r["run_s"] for r in mine), 1),
                "walls": [r["wall_s"] for r in mine],
            }
            rows.append(row)
            print(
                f"{mode:<5} {k:>3} {wall:>16.1f} {row['speedup']:>9.2f} {row['steps']:>6} {row['rounds']:>7} "
                f"{row['install_s']:>10.1f} {row['run_s']:>7.1f}  {row['walls']}"
            )
    print(
        "(speed-up: K = 1's median wall time over this K's; install and run seconds are summed over the steps, "
        "which overlap when K > 1)"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--cache",
        type=Path,
        default=CI_CACHE if CI_CACHE.is_dir() else None,
        help="the warm XLATOOLS_CACHE_DIR (default: the CI's bisect cache, else a new one)",
    )
    parser.add_argument("--cold-uv-cache", action="store_true", help="cold runs also start with an empty uv cache")
    parser.add_argument("--synthetic-only", action="store_true")
    parser.add_argument("--json", action="store_true", help="also print every number as JSON at the end")
    args = parser.parse_args()
    result = {"synthetic": synthetic(args.jobs)}
    if not args.synthetic_only:
        warm = args.cache or Path(tempfile.mkdtemp(prefix="xlatools-bench-warm-"))
        uv_cache = "an empty" if args.cold_uv_cache else "this machine's"
        print(
            f"\nrelease bisection jax {GOOD}..{BAD} (4 candidates), warm cache {warm}, "
            f"{os.cpu_count()} CPUs; cold runs with {uv_cache} uv cache"
        )
        runs = real(args.jobs, args.repeats, warm, args.cold_uv_cache)
        result.update(runs=runs, table=table(runs, args.jobs))
    if args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
