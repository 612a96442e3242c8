"""Helpers shared by the build tests: run `xlatools build` on the fixture tree, read its bundle."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import REPO, run_cli

FIXTURE_TREE = REPO / "tests" / "fixtures" / "jaxlike"
PROFILES = Path(__file__).resolve().parent / "profiles"
BASE_IMAGE = "xlatools-test-base:bookworm"  # what profiles/fixture-cpu.yaml builds on
BUILD_TIMEOUT = 900  # first build includes the test image (apt-get in a container)


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
    proc = run_cli(
        "build",
        "--profile",
        profile,
        "--source",
        str(tree),
        "--out",
        str(out),
        *args,
        cwd=tree.parent,
        env=full_env,
        timeout=BUILD_TIMEOUT,
    )
    return BuildResult(proc, out)


def containers_of(client, profile_name: str) -> list:
    return client.containers.list(all=True, filters={"label": f"org.xlatools.profile={profile_name}"})


def wheel_info(wheel: Path, package: str = "jaxlib") -> dict:
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{package}/_build_info.py").decode()
    return json.loads(text.split("=", 1)[1])
