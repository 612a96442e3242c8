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


@pytest.fixture
def nginx():
    """Start Debian's nginx as an HTTP cache: `nginx(writable=..., basic_auth=..., token=...)` (stopped after the test)."""
    from tests.integration.remote.servers import NginxCache, nginx_binary

    require("nginx", nginx_binary() is not None, "apt-get install nginx (Debian's, with the WebDAV module)")
    started = []

    def start(**options) -> NginxCache:
        server = NginxCache(**options).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture(scope="session")
def buildgrid():
    """One BuildGrid server (REAPI CAS + action cache on 127.0.0.1) for the session."""
    from tests.integration.remote.servers import BuildGrid, buildgrid_binary

    binary = buildgrid_binary()
    require(
        "buildgrid",
        binary is not None,
        "scripts/make-buildgrid-venv.sh DIR, then export XLATOOLS_BGD=DIR/bin/bgd (or put bgd on PATH)",
    )
    with BuildGrid(binary) as server:
        yield server
