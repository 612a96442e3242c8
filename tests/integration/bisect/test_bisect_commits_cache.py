"""`bisect commits` with a profile's remote cache (nginx on 127.0.0.1): every step's build uses it,
so a second machine bisecting the same range gets each step's build from the team's cache, and each
step says how many of its actions came from a cache. (Hit shares: benchmarks/remote_cache_bisect.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers import run_cli
from tests.integration.bisect.test_bisect_commits import TEST, make_history
from tests.integration.building.build_helpers import FIXTURE_TREE

from xlatools.records import read_bundle

pytestmark = pytest.mark.bazel


def test_a_second_machine_gets_every_step_build_from_the_team_cache(bazel_bin, tmp_path, nginx):
    cache = nginx()
    shas = make_history(tmp_path / "xla")
    shutil.copytree(FIXTURE_TREE, tmp_path / "jax")
    (tmp_path / "team.yaml").write_text(f"extends: dbg-cpu\nbazel:\n  remote_cache: {cache.url}\n")

    def bisect(machine: str) -> tuple[dict, str]:
        home = tmp_path / f"home-{machine}"
        home.mkdir()
        (tmp_path / f"check-{machine}.py").write_text(TEST)  # its own test: a new bisection, not a resumed one
        env = {"HOME": str(home), "XLATOOLS_CACHE_DIR": str(tmp_path / f"cache-{machine}"), "JAX_PLATFORMS": "cpu"}
        try:
            done = run_cli(
                "bisect",
                "commits",
                "--xla",
                f"{shas[0]}..{shas[-1]}",
                "--xla-repo",
                str(tmp_path / "xla"),
                "--source",
                str(tmp_path / "jax"),
                "--profile",
                "team.yaml",
                "--local",
                "--json",
                "--",
                f"check-{machine}.py",
                cwd=tmp_path,
                env=env,
                timeout=1800,
            )
        finally:
            subprocess.run(
                [bazel_bin, "shutdown"],
                cwd=tmp_path / "jax",
                env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                capture_output=True,
                timeout=120,
            )
        assert done.returncode == 0, done.stderr[-4000:]
        return json.loads(done.stdout), done.stderr

    first, _ = bisect("a")
    assert first["result"]["first_bad"]["key"] == shas[2]
    uploaded = cache.count("PUT", "/ac/", 201)
    assert uploaded >= 4  # each built commit's wheel action (v3 does not build)

    second, progress = bisect("b")
    assert second["result"]["first_bad"]["key"] == shas[2]
    # Each built step's state record says how bazel ran its build: every action from a cache.
    built = [step for step in second["steps"] if step["outcome"] != "skip"]
    assert built and all(
        step["bazel_processes"]["cache_hits"] == step["bazel_processes"]["actions"] == 1 for step in built
    ), built
    assert all("bazel_processes" not in step for step in second["steps"] if step["outcome"] == "skip")  # v3
    builds = [read_bundle(path.parent) for path in (Path(second["folder"]) / "builds").glob("*/manifest.json")]
    commits_built = {
        w.sha256 for b in builds if b.status == "ok" for w in b.wheels
    }  # a rebuilt commit may come from b's disk cache
    assert cache.count("GET", "/ac/", 200) >= len(commits_built) >= 4  # the team cache served each commit once
    assert "1 of 1 actions from cache" in progress
    n = len(built)
    assert second["summary"]["builds"] == {
        "actions": n,
        "cache_hits": n,
        "later_actions": n - 1,
        "later_cache_hits": n - 1,
    }
    assert first["summary"]["builds"]["later_cache_hits"] == 0  # every commit changes the one action's input
