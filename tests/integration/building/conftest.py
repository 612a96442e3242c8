"""Fixtures for build tests: a Docker engine, the offline base image, a copy of
the fixture JAX-like tree, and helpers to run `xlatools build` on it."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, require, run_cli  # tests/conftest.py (tests/ is on sys.path)

FIXTURE_TREE = REPO / "tests" / "fixtures" / "jaxlike"
PROFILES = Path(__file__).resolve().parent / "profiles"
BASE_IMAGE = "xlatools-test-base:bookworm"  # what profiles/fixture-cpu.yaml builds on
BUILD_TIMEOUT = 900  # first build includes the test image (apt-get in a container)


def _engine_problem() -> str | None:
    try:
        import docker

        docker.from_env(timeout=10).ping()
    except Exception as exc:  # any failure means: no usable engine
        return f"no Docker engine answers ({type(exc).__name__}); start dockerd"
    return None


@pytest.fixture(scope="session")
def docker_client():
    problem = _engine_problem()
    require("docker", problem is None, problem or "")
    import docker

    return docker.from_env(timeout=120)


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
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


@dataclass
class BuildResult:
    proc: subprocess.CompletedProcess
    out: Path

    @property
    def manifest(self) -> dict:
        return json.loads((self.out / "latest" / "manifest.json").read_text())

    @property
    def bundle(self) -> Path:
        return (self.out / "latest").resolve()


def profile_file(directory: Path, name: str, text: str) -> str:
    path = directory / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def run_build(tree: Path, profile: str, cache_root: Path, *args: str, env: dict | None = None) -> BuildResult:
    out = tree.parent / "out"
    full_env = {"XLATOOLS_CACHE_DIR": str(cache_root)}
    full_env.update(env or {})
    proc = run_cli("build", "--profile", profile, "--source", str(tree), "--out", str(out), *args,
                   cwd=tree.parent, env=full_env, timeout=BUILD_TIMEOUT)
    return BuildResult(proc, out)


def containers_of(client, profile_name: str) -> list:
    return client.containers.list(all=True, filters={"label": f"org.xlatools.profile={profile_name}"})


def wheel_info(wheel: Path, package: str = "jaxlib") -> dict:
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{package}/_build_info.py").decode()
    return json.loads(text.split("=", 1)[1])

