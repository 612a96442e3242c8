"""Fixtures for the native-debugging tests: Debian's real gdb, ptrace allowed."""

from __future__ import annotations

import shutil

import pytest
from tests.helpers import require


@pytest.fixture
def gdb() -> str:
    path = shutil.which("gdb")
    require("gdb", path is not None, "apt-get install gdb (native backtraces, xlatools debug)")
    return path
