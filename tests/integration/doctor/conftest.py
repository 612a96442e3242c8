"""Fixtures for the doctor tests: situations built for real (a venv with a mismatched
jax/jaxlib pair, a fake old libstdc++ made with gcc)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import build_versioned_lib, require

# jax 0.10.2 needs jaxlib >= 0.10.1: `import jax` raises with this pair.
MISMATCHED = ("jax==0.10.2", "jaxlib==0.4.30")


@pytest.fixture(scope="session")
def mismatched_python(tmp_path_factory) -> str:
    """A venv holding jax and a jaxlib it refuses, installed with --no-deps (uv when there, else pip)."""
    root = tmp_path_factory.mktemp("mismatched") / "venv"
    python = root / "bin" / "python"
    uv = shutil.which("uv")
    if uv:
        steps = [
            [uv, "venv", "-q", "-p", sys.executable, str(root)],
            [uv, "pip", "install", "-q", "--no-deps", "--python", str(python), *MISMATCHED],
        ]
    else:
        steps = [
            [sys.executable, "-m", "venv", "--without-pip", str(root)],
            [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", *MISMATCHED],
        ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        require(
            "package_index",
            done.returncode == 0,
            f"could not build the mismatched venv ({' '.join(step[:3])}...): {done.stderr.strip()[-300:]}",
        )
    return str(python)


@pytest.fixture(scope="session")
def old_libstdcxx(tmp_path_factory) -> Path:
    """A directory holding a real, too old libstdc++.so.6 (GLIBCXX_3.4 and 3.4.20 only)."""
    directory = tmp_path_factory.mktemp("old-libstdcxx")
    build_versioned_lib(directory, "libstdc++.so.6", ["GLIBCXX_3.4", "GLIBCXX_3.4.20"])
    return directory
