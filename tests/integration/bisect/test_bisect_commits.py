"""`xlatools bisect commits --xla` over a real git history of the fixture XLA stub, with a real local
bazel build of the fixture JAX-like tree per step (a real jaxlib build cannot run on this machine).

History (oldest first): v0, v1 good; v2 introduces the "bug"; v3 does not build (commit.txt missing,
so bazel fails: a skip); v4..v6 still bad. The search steps on v3 (skip) and must name v2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers import manifest, require, run_cli
from tests.integration.building.build_helpers import FIXTURE_TREE, wheel_info

pytestmark = pytest.mark.bazel

TEST = """import sys
import jaxlib  # the freshly built fixture wheel, first on PYTHONPATH
print(jaxlib.BUILD_INFO)
sys.exit(1 if "bug" in jaxlib.BUILD_INFO["xla"] else 0)
"""


def git_in(repo: Path):
    git = shutil.which("git")
    require("git", git is not None, "install git (apt-get install git)")
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_NOSYSTEM="1",
    )

    def run(*args: str) -> str:
        return subprocess.run(
            [git, "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    return run


def make_history(repo: Path) -> list[str]:
    run = git_in(repo)

    repo.mkdir()
    (repo / "WORKSPACE").write_text('workspace(name = "xla")\n')
    (repo / "BUILD").write_text('exports_files(["commit.txt"])\n')
    run("init", "-q", "-b", "main")
    shas = []
    for i, text in enumerate(["xla v0", "xla v1", "xla v2 bug", None, "xla v4 bug", "xla v5 bug", "xla v6 bug"]):
        if text is None:
            (repo / "commit.txt").unlink()  # the genrule's input is gone: this commit does not build
        else:
            (repo / "commit.txt").write_text(text + "\n")
        run("add", "-A")
        run("commit", "-q", "-m", f"v{i}" + (" breaks the build" if text is None else ""))
        shas.append(run("rev-parse", "HEAD"))
    return shas


def test_commit_bisection_builds_each_step_skips_the_unbuildable_and_names_the_bug(bazel_bin, tmp_path):
    shas = make_history(tmp_path / "xla")
    tree = tmp_path / "jax"
    shutil.copytree(FIXTURE_TREE, tree)
    (tmp_path / "check.py").write_text(TEST)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XLATOOLS_CACHE_DIR": str(tmp_path / "cache"), "JAX_PLATFORMS": "cpu", "NO_COLOR": "1"}
    try:
        done = run_cli(
            "bisect",
            "commits",
            "--xla",
            f"{shas[0]}..{shas[-1]}",
            "--xla-repo",
            str(tmp_path / "xla"),
            "--source",
            str(tree),
            "--profile",
            "dbg-cpu",
            "--local",
            "--json",
            "--",
            "check.py",
            cwd=tmp_path,
            env=env,
            timeout=1800,
        )
    finally:
        subprocess.run(
            [bazel_bin, "shutdown"],
            cwd=tree,
            env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    data = json.loads(done.stdout)
    assert [c["key"] for c in data["candidates"]] == shas
    result = data["result"]
    assert result["first_bad"]["key"] == shas[2] and result["last_good"]["key"] == shas[1]
    assert result["maybe_first_bad"] == []
    steps = {s["key"]: s for s in data["steps"]}
    assert steps[shas[3]]["outcome"] == "skip" and "build failed" in steps[shas[3]]["reason"]
    assert manifest(Path(steps[shas[3]]["bundle"]))["status"] == "failed"  # the failed build's own bundle
    assert len(data["steps"]) == 5 and len(steps) == 5  # ends, the skip, two searches; nothing twice
    bad = (Path(data["folder"]) / "first-bad").resolve()
    assert "xla v2 bug" in (bad / "stdout.log").read_text()
    builds = sorted((Path(data["folder"]) / "builds").glob("*/wheels/*.whl"))
    assert {wheel_info(w)["xla"] for w in builds} == {"xla v0", "xla v1", "xla v2 bug", "xla v6 bug"}
    assert not (Path(data["folder"]) / "trees" / "xla").exists()  # the step checkout is gone at the end
    assert (
        "trees"
        not in subprocess.run(
            ["git", "-C", str(tmp_path / "xla"), "worktree", "list"], capture_output=True, text=True
        ).stdout
    )


def test_commit_range_errors(tmp_path):
    shas = make_history(tmp_path / "xla")
    (tmp_path / "check.py").write_text(TEST)
    base = (
        "bisect",
        "commits",
        "--xla-repo",
        str(tmp_path / "xla"),
        "--source",
        str(tmp_path),
        "--profile",
        "dbg-cpu",
        "--local",
    )
    cases = {
        f"{shas[3]}..{shas[3]}": "same commit",
        f"{shas[4]}..{shas[1]}": "not an ancestor",
        f"{shas[0]}..deadbeef": "does not exist",
        "nodots": "expected GOOD..BAD",
    }
    for commits, message in cases.items():
        done = run_cli(
            *base, "--xla", commits, "--", "check.py", cwd=tmp_path, env={"XLATOOLS_CACHE_DIR": str(tmp_path / "cache")}
        )
        assert done.returncode == 2 and message in done.stderr, (commits, done.stderr)
        assert "Traceback" not in done.stderr


def test_jax_commit_bisection_builds_the_tree_at_each_commit(bazel_bin, tmp_path):
    tree = tmp_path / "jax"
    shutil.copytree(FIXTURE_TREE, tree)
    run = git_in(tree)
    run("init", "-q", "-b", "main")
    shas = []
    for text in ("jax v0", "jax v1", "jax v2 bug", "jax v3 bug"):  # the tree's own XLA stub changes
        (tree / "third_party" / "xla_stub" / "commit.txt").write_text(text + "\n")
        run("add", "-A")
        run("commit", "-q", "-m", text)
        shas.append(run("rev-parse", "HEAD"))
    (tmp_path / "check.py").write_text(TEST)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XLATOOLS_CACHE_DIR": str(tmp_path / "cache"), "JAX_PLATFORMS": "cpu"}
    done = run_cli(
        "bisect",
        "commits",
        "--jax",
        f"{shas[0]}..{shas[-1]}",
        "--source",
        str(tree),
        "--profile",
        "dbg-cpu",
        "--local",
        "--json",
        "--",
        "check.py",
        cwd=tmp_path,
        env=env,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    data = json.loads(done.stdout)
    assert data["result"]["first_bad"]["key"] == shas[2] and data["result"]["last_good"]["key"] == shas[1]
    assert len(data["steps"]) == 4
    assert not (Path(data["folder"]) / "trees" / "jax").exists()  # checkout removed, its bazel server stopped
