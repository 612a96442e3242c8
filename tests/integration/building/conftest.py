"""Fixtures for build tests: a Docker engine, the offline base image, a fresh
copy of the fixture JAX-like tree (helpers are in build_helpers.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.helpers import REPO, require
from tests.integration.building.build_helpers import BASE_IMAGE, FIXTURE_TREE


def docker_errors() -> tuple[type[BaseException], ...]:
    try:
        import docker.errors
        import requests
    except ImportError:
        return ()
    return (docker.errors.DockerException, requests.RequestException)


def _engine_problem() -> str | None:
    try:
        import docker

        docker.from_env(timeout=10).ping()
    # what "no usable engine" looks like: docker not installed, no socket or refused (DockerException and
    # the requests/socket errors under it), an engine that answers with an error (APIError is a DockerException)
    except (ImportError, OSError, docker_errors()) as exc:
        return f"no Docker engine answers ({type(exc).__name__}); start dockerd"
    return None


@pytest.fixture(scope="session")
def _engine():
    problem = _engine_problem()
    require("docker", problem is None, problem or "")
    import docker

    return docker.from_env(timeout=120)


@pytest.fixture
def docker_client(request, _engine):
    """The engine, for tests marked `docker` only: `pytest -m "not docker"` must leave Docker alone."""
    assert request.node.get_closest_marker("docker"), f"{request.node.nodeid} uses Docker: mark it @pytest.mark.docker"
    return _engine


@pytest.fixture(scope="session")
def base_image(_engine) -> str:
    """The offline Debian image (scripts/make-test-base-image.sh; reused when present)."""
    script = REPO / "scripts" / "make-test-base-image.sh"
    done = subprocess.run([str(script), BASE_IMAGE], capture_output=True, text=True, timeout=900)
    if done.returncode == 3:
        require("debootstrap", False, done.stderr.strip())
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return BASE_IMAGE


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory) -> Path:
    """Bazel disk cache and container HOMEs, shared by the session's builds."""
    return tmp_path_factory.mktemp("xlatools-cache")


@pytest.fixture
def tree(tmp_path) -> Path:
    target = tmp_path / "jax"
    shutil.copytree(FIXTURE_TREE, target)
    return target
