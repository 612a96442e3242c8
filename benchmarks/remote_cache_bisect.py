"""Hit share of a team's remote cache across `bisect commits` steps, on the fixture history.

The history of tests/integration/bisect (7 XLA commits: v2 introduces the bug, v3 does not build)
is bisected with a real local bazel build of the fixture JAX-like tree per step, every step
building with a profile whose `bazel.remote_cache` is a real nginx WebDAV cache on 127.0.0.1:

  A  machine A, empty team cache: the first bisection of the range;
  B  machine B (own HOME, so a new bazel output base, and an empty disk cache), the same range
     with another test script: what a teammate or a CI job gets from A's uploads;
  A' machine A again, a new bisection folder: its own disk cache answers first.

For each step (its record in the bisect state): the build's actions (bazel's process summary less
its internal processes), the hits bazel reports (bazel 4 counts disk-cache hits as "remote cache hit" too) and the requests
the nginx cache served (GET /ac/ 200: the hits that really came from the team cache). Prints the
hit share of the later steps (2..n) per scenario and the wall time ratios.

Needs nginx (Debian's), bazel (bazel-bootstrap) and git. Usage: python benchmarks/remote_cache_bisect.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the repository's packages (the test fixtures' history and servers)

from benchmarks._bench import installed_env  # noqa: E402
from tests.integration.bisect.test_bisect_commits import TEST, make_history  # noqa: E402
from tests.integration.building.build_helpers import FIXTURE_TREE  # noqa: E402
from tests.integration.remote.servers import NginxCache  # noqa: E402


def bisect(work: Path, machine: str, shas: list[str], profile: Path, cache: NginxCache, check: str) -> dict:
    home = work / f"home-{machine}"
    home.mkdir(exist_ok=True)
    env = installed_env(
        {
            **os.environ,
            "HOME": str(home),
            "XLATOOLS_CACHE_DIR": str(work / f"cache-{machine}"),
            "JAX_PLATFORMS": "cpu",
            "NO_COLOR": "1",
        }
    )
    served_before = cache.count("GET", "/ac/", 200)
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "xlatools",
            "bisect",
            "commits",
            "--xla",
            f"{shas[0]}..{shas[-1]}",
            "--xla-repo",
            str(work / "xla"),
            "--source",
            str(work / "jax"),
            "--profile",
            str(profile),
            "--local",
            "--json",
            "--",
            check,
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    subprocess.run(
        ["bazel", "shutdown"], cwd=work / "jax", env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True
    )
    if done.returncode != 0:
        sys.exit(f"bisection on {machine} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    data = json.loads(done.stdout)  # the bisect state: each built step carries bazel's process counts
    return {
        "wall": wall,
        "steps": data["steps"],
        "served": cache.count("GET", "/ac/", 200) - served_before,
        "first_bad": data["result"]["first_bad"]["label"],
    }


def report(name: str, run: dict) -> float | None:
    built = [step for step in run["steps"] if step.get("bazel_processes")]
    print(
        f"\n{name}: {len(run['steps'])} steps ({len(built)} built) in {run['wall']:.1f} s, first bad "
        f"{run['first_bad']}, {run['served']} action results served by the team cache"
    )
    print(f"  {'step':>4}  {'outcome':8} {'actions':>7} {'hits':>5}")
    later_actions = later_hits = 0
    for step in run["steps"]:
        counts = step.get("bazel_processes") or {"actions": 0, "cache_hits": 0}
        print(f"  {step['n']:>4}  {step['outcome']:8} {counts['actions']:>7} {counts['cache_hits']:>5}")
        if step["n"] > 1:
            later_actions += counts["actions"]
            later_hits += counts["cache_hits"]
    share = later_hits / later_actions if later_actions else None
    print(
        f"  hit share of later steps: {later_hits}/{later_actions}" + (f" = {share:.0%}" if share is not None else "")
    )
    return share


def main() -> None:
    for tool in ("bazel", "git"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")
    with tempfile.TemporaryDirectory(prefix="xlatools-bench-rc-") as tmp, NginxCache() as cache:
        work = Path(tmp)
        shas = make_history(work / "xla")
        shutil.copytree(FIXTURE_TREE, work / "jax")
        (work / "check.py").write_text(TEST)
        for n in (2, 3):  # other tests of the same builds: new bisections, not a resumed one
            (work / f"check{n}.py").write_text(f"# test {n} of the same builds\n" + TEST)
        profile = work / "team.yaml"
        profile.write_text(f"extends: dbg-cpu\nbazel:\n  remote_cache: {cache.url}\n")
        runs = {
            "A  (empty team cache)": bisect(work, "a", shas, profile, cache, "check.py"),
            "B  (another machine, same range)": bisect(work, "b", shas, profile, cache, "check2.py"),
            "A' (machine A again, new bisection)": bisect(work, "a", shas, profile, cache, "check3.py"),
        }
        shares = {name: report(name, run) for name, run in runs.items()}
        first = next(iter(runs.values()))["wall"]
        print(
            "\nwall time vs A: "
            + ", ".join(f"{name.split()[0]} {run['wall'] / first:.2f}" for name, run in runs.items())
        )
        print(
            "later-step hit shares: "
            + ", ".join(f"{name.split()[0]} {'n/a' if s is None else format(s, '.0%')}" for name, s in shares.items())
        )


if __name__ == "__main__":
    main()
