"""Bisect benchmarks.

1. Steps taken vs ceil(log2 N) over synthetic histories (the real engine, plain callables): every
   boundary for small N, random boundaries for large N; without skips (goal: at most ceil(log2 N) + 2,
   the 2 being the two ends we always test) and with random skips.
2. Wall time of a real release bisection split into install and run, then the same bisection again
   (--fresh): every environment comes from the cache, so zero installs.

Usage: python benchmarks/bisect_search.py [--synthetic-only] [--good 0.4.28 --bad 0.4.31] [--cache DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository's packages

from benchmarks._bench import installed_env, release_bisection  # noqa: E402
from xlatools.bisect.engine import Oracle, StepVerdict, bisect_ordered  # noqa: E402


def steps_for(n: int, first_bad: int, skip: set[int]) -> tuple[int, bool]:
    """Steps one bisection takes, and whether its answer is exact (no skip left in the boundary)."""
    steps: list = []

    def step(key: str, label: str) -> StepVerdict:
        i = int(key)
        if i in skip:
            return StepVerdict("skip")
        return StepVerdict("bad" if i >= first_bad else "good")

    keys = [str(i) for i in range(n)]
    result = bisect_ordered(keys, keys, Oracle(steps, step, lambda r: None, lambda: ""), 0)
    assert result.first_bad == first_bad or first_bad - 1 in result.maybe_first_bad or result.maybe_first_bad
    return len(steps), not result.maybe_first_bad


def synthetic(seed: int = 0) -> None:
    rng = random.Random(seed)
    print("synthetic histories (steps include the two ends)")
    print(f"{'N':>6} {'skips':>6} {'ceil(log2 N)+2':>15} {'mean':>7} {'max':>5} {'max/goal':>9} {'exact':>7}")
    for n in (8, 16, 64, 256, 1000, 4096):
        goal = math.ceil(math.log2(n)) + 2
        bounds = range(1, n) if n <= 256 else [rng.randrange(1, n) for _ in range(300)]
        for rate in (0.0, 0.1, 0.3):
            counts, exact = [], 0
            for first_bad in bounds:
                skip = {i for i in range(1, n - 1) if rng.random() < rate}
                count, is_exact = steps_for(n, first_bad, skip)
                counts.append(count)
                exact += is_exact
            print(
                f"{n:>6} {rate:>6.0%} {goal:>15} {sum(counts) / len(counts):>7.2f} {max(counts):>5} "
                f"{max(counts) / goal:>9.2f} {exact / len(counts):>7.0%}"
            )


def release_wall(good: str, bad: str, cache: Path | None) -> None:
    work = Path(tempfile.mkdtemp(prefix="xlatools-bisect-bench-"))
    cache = cache or work / "cache"
    env = installed_env()
    env.update({"XLATOOLS_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"})
    print(f"\nrelease bisection jax {good}..{bad} (cache {cache})")
    print(
        f"{'run':<7} {'wall s':>8} {'steps':>6} {'installs':>9} {'install s':>10} {'run s':>7} {'other s':>8}  first bad"
    )
    for label, extra in (("first", []), ("second", ["--fresh"])):
        wall, data = release_bisection(work, env, good, bad, *extra)
        s = data["summary"]
        installs = sum(1 for step in s["per_step"] if step["install_s"] > 0)
        other = wall - s["install_s"] - s["run_s"]
        print(
            f"{label:<7} {wall:>8.1f} {s['steps']:>6} {installs:>9} {s['install_s']:>10.1f} {s['run_s']:>7.1f} "
            f"{other:>8.1f}  {data['result']['first_bad']['label']}"
        )
    print("(other: index query, start-up, state writes; run includes the one-time probe of each new environment)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--synthetic-only", action="store_true")
    parser.add_argument("--good", default="0.4.28")
    parser.add_argument("--bad", default="0.4.31")
    parser.add_argument("--cache", type=Path, default=None, help="XLATOOLS_CACHE_DIR to use (default: a fresh one)")
    args = parser.parse_args()
    synthetic()
    if not args.synthetic_only:
        release_wall(args.good, args.bad, args.cache)


if __name__ == "__main__":
    main()
