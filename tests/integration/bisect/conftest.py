"""Fixtures for the bisect tests: one environment cache for the whole session (release environments
are made once and reused by every test, as for a user), the CLI run in a fresh folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.helpers import require, run_cli


@pytest.fixture(scope="session")
def bisect_cache(tmp_path_factory) -> Path:
    """XLATOOLS_TEST_BISECT_CACHE when set (CI may keep it between runs: no installs at all), else a
    session folder. Release environments land in <it>/envs/."""
    from xlatools.bisect.envs import find_uv

    require("uv", find_uv() is not None, "pip install uv (release environments are made with it)")
    kept = os.environ.get("XLATOOLS_TEST_BISECT_CACHE")
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        return Path(kept)
    return tmp_path_factory.mktemp("bisect-cache")


@pytest.fixture
def bx(tmp_path, bisect_cache):
    """Run `xlatools ARGS` in tmp_path with the session's environment cache."""

    def call(*args, env=None, timeout=900, cwd=None):
        full = {
            "XLATOOLS_CACHE_DIR": str(bisect_cache),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "JAX_PLATFORMS": "cpu",
            **(env or {}),
        }
        return run_cli(*args, cwd=cwd or tmp_path, env=full, timeout=timeout)

    return call
