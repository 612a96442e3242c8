"""The CLI module must not pull heavy libraries in at start-up (speed is part of
correctness: `xlatools --help` and tab completion run it on every keystroke)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("jax", "jaxlib", "numpy", "docker", "httpx", "pydantic", "rich", "yaml")


def test_cli_start_up_imports_nothing_heavy():
    code = "import sys, xlatools.cli; print(','.join(m for m in %r if m in sys.modules))" % (HEAVY,)
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "", f"imported at start-up: {loaded}"
