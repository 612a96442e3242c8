"""Shared test fixtures.

Tests that need a component this machine may lack (bazel, a Docker engine, a
second jaxlib) skip with the reason. CI sets XLATOOLS_REQUIRE_<NAME>=1, which
turns such a skip into a failure, so CI cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def require(component: str, available: bool, reason: str) -> None:
    """Skip (or, when CI demands the component, fail) if it is missing."""
    if available:
        return
    if os.environ.get(f"XLATOOLS_REQUIRE_{component.upper()}", "") not in ("", "0"):
        pytest.fail(f"{component} is required here (XLATOOLS_REQUIRE_{component.upper()}=1) but missing: {reason}")
    pytest.skip(f"{component} not available: {reason}")


@pytest.fixture
def bazel_bin() -> str:
    path = os.environ.get("XLATOOLS_BAZEL") or shutil.which("bazel")
    require("bazel", path is not None, "install Debian's bazel-bootstrap (apt-get install bazel-bootstrap)")
    return path


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120, input: str | None = None):
    """Run the real `xlatools` CLI as a subprocess of this interpreter."""
    full_env = dict(os.environ)
    full_env.pop("XLATOOLS_PROFILE_PATH", None)
    full_env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "xlatools", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )


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
