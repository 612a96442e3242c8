"""Output paths that cannot be written end in exit 2 naming the option, the path and why (no traceback)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers import run_cli


def _blocked(tmp_path: Path) -> Path:
    """A path below a regular file: fails for root too (chmod does not stop root)."""
    (tmp_path / "plain-file").write_text("x")
    return tmp_path / "plain-file" / "out.txt"


def _git_checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "xla"
    repo.mkdir()
    (repo / "WORKSPACE").write_text("")
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_NOSYSTEM="1",
    )
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)
    return repo


@pytest.mark.parametrize(
    "command",
    [
        ["bazelrc", "--profile", "base", "-o"],
        ["profiles", "schema", "-o"],
    ],
)
@pytest.mark.parametrize(
    "where,reason",
    [
        ("blocked", "plain-file is not a directory"),
        ("folder", "is a directory"),
        ("proc", "cannot create a file in /proc"),
    ],
)
def test_unwritable_output_is_bad_input(tmp_path, command, where, reason):
    if where == "proc" and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc (a folder where nobody, root included, can create files)")
    path = {"blocked": _blocked(tmp_path), "folder": tmp_path, "proc": Path("/proc/xlatools-out.txt")}[where]
    result = run_cli(*command, str(path), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"--output {path}: " in result.stderr and reason in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob(".*.tmp")), "no temp file left behind"


def test_unwritable_lock_is_bad_input(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    xla = _git_checkout(tmp_path)
    lock = _blocked(tmp_path)
    result = run_cli("pin", "local", "--xla", str(xla), "--lock", str(lock), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"--lock {lock}: cannot write" in result.stderr and "Traceback" not in result.stderr


def test_output_through_a_link_keeps_the_link(tmp_path):
    target = tmp_path / "real.bazelrc"
    (tmp_path / "link.bazelrc").symlink_to(target)
    result = run_cli("bazelrc", "--profile", "base", "-o", str(tmp_path / "link.bazelrc"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "link.bazelrc").is_symlink() and "build:xlatools" in target.read_text()
