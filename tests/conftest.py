"""Fixtures shared by every test folder (helpers live in tests/helpers.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.helpers import require, run_cli


@pytest.fixture
def bazel_bin() -> str:
    path = os.environ.get("XLATOOLS_BAZEL") or shutil.which("bazel")
    require("bazel", path is not None, "install Debian's bazel-bootstrap (apt-get install bazel-bootstrap)")
    return path


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def profile_dir(tmp_path, monkeypatch):
    """An empty directory first on the profile search path, for in-process tests."""
    directory = tmp_path / "profiles"
    directory.mkdir()
    monkeypatch.setenv("XLATOOLS_PROFILE_PATH", str(directory))
    monkeypatch.chdir(tmp_path)
    return directory
