"""The package keeps its shape: imports point down the layers, no cycles, no oversized module."""

import subprocess
import sys

from tests.helpers import REPO


def test_house_shape_script_finds_no_problem():
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "house_shape.py"), str(REPO / "xlatools")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
