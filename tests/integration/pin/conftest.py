"""Fixtures for `xlatools pin` tests: a real HTTP server on 127.0.0.1, a private
cache, local git repositories (helpers and tree builders are in helpers.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from http.server import ThreadingHTTPServer

import pytest

from tests.helpers import require, run_cli
from tests.integration.pin.helpers import ArchiveServer, archive_handler


@pytest.fixture
def archive_server():
    state = ArchiveServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), archive_handler(state))
    httpd.daemon_threads = True
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    state.release.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def pin_env(tmp_path, monkeypatch):
    """Environment for CLI runs: private cache, no retry back-off, no proxies."""
    env = {
        "XLATOOLS_CACHE_DIR": str(tmp_path / "cache"),
        "XLATOOLS_PIN_RETRY_DELAY": "0",
        "NO_PROXY": "*",
        "no_proxy": "*",
        "HTTP_PROXY": "",
        "http_proxy": "",
        "HTTPS_PROXY": "",
        "https_proxy": "",
        "ALL_PROXY": "",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def pin(pin_env, tmp_path):
    """Run `xlatools pin ...` in tmp_path with the private cache."""

    def run(*args: str, env: dict | None = None, **kwargs):
        kwargs.setdefault("cwd", tmp_path)
        return run_cli("pin", *args, env={**pin_env, **(env or {})}, **kwargs)

    return run


@pytest.fixture
def git_repo(tmp_path):
    """A local repository with a branch `main`, a lightweight tag and an annotated tag."""
    git = shutil.which("git")
    require("git", git is not None, "install git (apt-get install git)")
    repo = tmp_path / "xla-repo"
    repo.mkdir()
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_NOSYSTEM="1",
    )

    def git_run(*args: str) -> str:
        return subprocess.run(
            [git, "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    git_run("init", "-q", "-b", "main")
    (repo / "README").write_text("one\n")
    git_run("add", "README")
    git_run("commit", "-q", "-m", "one")
    first = git_run("rev-parse", "HEAD")
    git_run("tag", "-a", "v1", "-m", "release 1")
    (repo / "README").write_text("two\n")
    git_run("commit", "-q", "-am", "two")
    git_run("tag", "light")
    return {"path": repo, "first": first, "head": git_run("rev-parse", "HEAD"), "git": git_run}
