"""Helpers shared by every test folder, imported normally (`from tests.helpers import ...`).

Conftests hold fixtures only. Tests that need a component this machine may lack
(bazel, a Docker engine, a second jaxlib) call `require`, which skips with the
reason, or fails when CI sets XLATOOLS_REQUIRE_<NAME>=1, so CI cannot pass by skipping.
"""

from __future__ import annotations

import json
import os
import signal
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


def interpreter_from_env(variable: str, component: str, what: str, made_by: str) -> str:
    """A second interpreter the tests drive through --python, named by `variable` (skip/fail via `require`)."""
    path = os.environ.get(variable, "")
    require(component, bool(path) and os.path.exists(path), f"set {variable} to {what} ({made_by} makes one)")
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


def sigint_default() -> None:
    """preexec_fn for a child that a test interrupts with SIGINT.

    A job started in the background (as a CI harness may do) inherits SIGINT
    ignored, and the child Python then never sees Ctrl-C: restore the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def bundles(root: Path) -> list[Path]:
    """The bundle directories under an --out root (not the `latest` link)."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())
