"""`xlatools build --lock`: the lock's XLA pin is applied to the tree (and
verified) before the build, and a local XLA checkout becomes --local_xla_path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from xlatools.pin.lock import Lock, LockEntry, write_lock
from xlatools.pin.sri import hex_to_sri

from tests.helpers import require, run_cli
from tests.integration.building.build_helpers import PROFILES, run_build, wheel_info

COMMIT = "1234567890abcdef1234567890abcdef12345678"
SHA256 = "36fd883a02fbdabd8c105cf28a97337420a872b17d3849bee95726709cdd2809"


def archive_lock(path: Path) -> Path:
    entry = LockEntry(
        name="xla",
        kind="archive",
        commit=COMMIT,
        repo="https://example.invalid/openxla/xla",
        urls=(f"https://example.invalid/openxla/xla/archive/{COMMIT}.tar.gz",),
        sha256=SHA256,
        integrity=hex_to_sri(SHA256),
        strip_prefix=f"xla-{COMMIT}",
    )
    write_lock(Lock(path).with_entry(entry))
    return path


@pytest.fixture
def xla_checkout(tmp_path):
    """A git checkout standing in for XLA: a bazel repository with commit.txt."""
    git = shutil.which("git")
    require("git", git is not None, "install git (apt-get install git)")
    repo = tmp_path / "xla"
    repo.mkdir()
    (repo / "WORKSPACE").write_text('workspace(name = "xla")\n')
    (repo / "BUILD").write_text('exports_files(["commit.txt"])\n')
    (repo / "commit.txt").write_text("xla-from-the-lock\n")
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_NOSYSTEM="1",
    )

    def git_run(*args: str) -> None:
        subprocess.run([git, "-C", str(repo), *args], env=env, check=True, capture_output=True)

    git_run("init", "-q", "-b", "main")
    git_run("add", ".")
    git_run("commit", "-q", "-m", "xla")
    return repo, git_run


def local_lock(tmp_path: Path, xla: Path) -> Path:
    lock = tmp_path / "xlatools.lock"
    done = run_cli("pin", "local", "--xla", str(xla), "--lock", str(lock), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return lock


def test_dry_run_shows_the_pin_and_changes_nothing(tree, tmp_path):
    lock = archive_lock(tmp_path / "xlatools.lock")
    before = (tree / "third_party/xla/revision.bzl").read_text()
    result = run_build(tree, "dbg-cpu", tmp_path / "cache", "--lock", str(lock), "--dry-run", "--json")
    assert result.proc.returncode == 0, result.proc.stderr
    plan = json.loads(result.proc.stdout)
    assert f'+XLA_COMMIT = "{COMMIT}"' in plan["tree"]["pin_diff"]
    assert (tree / "third_party/xla/revision.bzl").read_text() == before


@pytest.mark.bazel
def test_archive_lock_is_applied_before_the_build(bazel_bin, tree, tmp_path):
    lock = archive_lock(tmp_path / "xlatools.lock")
    home = tmp_path / "home"
    home.mkdir()
    try:
        result = run_build(tree, "dbg-cpu", tmp_path / "cache", "--local", "--lock", str(lock), env={"HOME": str(home)})
        assert result.proc.returncode == 0, result.proc.stderr[-3000:]
        [wheel] = result.manifest["wheels"]
        assert wheel_info(tmp_path / "dist" / wheel["name"])["xla_commit"] == COMMIT  # bazel built the pinned tree
        assert result.manifest["pin"]["lock"]["dependencies"]["xla"]["commit"] == COMMIT
        assert result.manifest["pin"]["lock_file"] == str(lock)
        assert any(p.endswith("third_party/xla/revision.bzl") for p in result.manifest["tree"]["pin_changed"])
    finally:
        subprocess.run(
            [bazel_bin, "shutdown"],
            cwd=tree,
            env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            timeout=120,
        )


def test_lock_that_does_not_verify_is_refused_before_anything_runs(tree, tmp_path, xla_checkout):
    xla, git = xla_checkout
    lock = local_lock(tmp_path, xla)
    (xla / "commit.txt").write_text("moved on\n")
    git("commit", "-q", "-am", "newer")  # no longer the locked commit
    result = run_build(tree, "dbg-cpu", tmp_path / "cache", "--local", "--lock", str(lock))
    assert result.proc.returncode == 2
    assert "the XLA pin does not match the lock" in result.proc.stderr and "the lock says" in result.proc.stderr
    assert "Traceback" not in result.proc.stderr
    assert not (tree / ".bazelrc.user").exists() and not (tmp_path / "out").exists()


@pytest.mark.docker
def test_local_xla_from_the_lock_is_built_in_the_container(
    docker_client, base_image, cache_root, tree, tmp_path, xla_checkout
):
    xla, _ = xla_checkout
    lock = local_lock(tmp_path, xla)
    result = run_build(tree, str(PROFILES / "fixture-cpu.yaml"), cache_root, "--lock", str(lock))
    assert result.proc.returncode == 0, result.proc.stderr[-3000:]
    [wheel] = result.manifest["wheels"]
    assert wheel_info(tmp_path / "dist" / wheel["name"])["xla"] == "xla-from-the-lock"
    assert "--local_xla_path=/xlatools/xla" in result.manifest["plan"]["argv"]
    mount = next(m for m in result.manifest["plan"]["mounts"] if m["target"] == "/xlatools/xla")
    assert mount["source"] == str(xla) and mount["read_only"]
    assert result.manifest["pin"]["lock"]["dependencies"]["xla"]["kind"] == "local"
