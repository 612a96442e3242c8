"""First vs second `xlatools build` of the fixture tree with unchanged inputs.

Two scenarios, each timing the whole CLI (start-up, image check, container, bazel):
  cold image:  no build image and an empty cache (image built with apt-get, bazel cold),
               then the same build again (image reused, bazel output base and disk cache warm);
  warm image:  the image exists, the caches are empty, then the same build again.
Prints each time and the ratio second / first. Goal: <= 0.2 for the cold-image scenario,
which is what a user sees on a new machine.
Needs a Docker engine and the offline base image (scripts/make-test-base-image.sh, run here
when missing). Usage: python benchmarks/build_cache.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TREE = REPO / "tests" / "fixtures" / "jaxlike"
PROFILE = REPO / "tests" / "integration" / "building" / "profiles" / "fixture-cpu.yaml"


def xlatools(work: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, XLATOOLS_CACHE_DIR=str(cache), NO_COLOR="1")
    command = [
        sys.executable,
        "-m",
        "xlatools",
        "build",
        "--profile",
        str(PROFILE),
        "--source",
        str(work / "jax"),
        "--out",
        str(work / "out"),
        *args,
    ]
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)


def timed_build(work: Path, cache: Path) -> float:
    start = time.perf_counter()
    done = xlatools(work, cache)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed


def one_pair(remove_image: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="xlatools-bench-") as tmp:
        work = Path(tmp)
        shutil.copytree(TREE, work / "jax")
        cache = work / "cache"  # empty: cold bazel output base and disk cache
        if remove_image:
            plan = json.loads(xlatools(work, cache, "--dry-run", "--json").stdout)
            subprocess.run(["docker", "rmi", "-f", plan["image"]["ref"]], capture_output=True)
        first = timed_build(work, cache)
        second = timed_build(work, cache)
        return first, second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="pairs per scenario (default 3)")
    args = parser.parse_args()
    script = REPO / "scripts" / "make-test-base-image.sh"
    subprocess.run([str(script)], check=True, stdout=subprocess.DEVNULL)
    print(f"fixture build of {PROFILE.name}, {args.runs} pair(s) per scenario; seconds (median)")
    goal = None
    for name, remove in (("cold image", True), ("warm image", False)):
        pairs = [one_pair(remove) for _ in range(args.runs)]
        first = statistics.median(p[0] for p in pairs)
        second = statistics.median(p[1] for p in pairs)
        ratio = second / first
        goal = ratio if goal is None else goal
        detail = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in pairs)
        print(f"  {name:10}  first {first:6.1f}  second {second:5.1f}  ratio {ratio:.3f}   (pairs: {detail})")
    print(f"goal: cold-image ratio <= 0.2: {'met' if goal <= 0.2 else 'NOT met'} ({goal:.3f})")


if __name__ == "__main__":
    main()
