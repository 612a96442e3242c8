"""The CLI module must not pull heavy libraries in at start-up (speed is part of
correctness: `xlatools --help` and tab completion run it on every keystroke)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("jax", "jaxlib", "numpy", "docker", "httpx", "pydantic", "rich", "yaml", "psutil", "tenacity")


def test_cli_start_up_imports_nothing_heavy():
    code = "import sys, xlatools.cli; print(','.join(m for m in %r if m in sys.modules))" % (HEAVY,)
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "", f"imported at start-up: {loaded}"


def test_the_run_path_loads_psutil_only_to_stop_a_tree():
    """proctree is on every run's path; psutil (~10-40 ms to import) is loaded when a tree is stopped or
    searched, so a run that ends by itself never pays for it. Expected: the run modules load, psutil does not."""
    code = "import sys, xlatools.run.process, xlatools.proctree; print('psutil' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False", "xlatools.run.process imported psutil at module level"
