"""Ctrl-C and SIGTERM are exit 130 at every moment (issue 37 item 3): nothing left running, no bundle left
`running` or without a manifest, never exit 70.

The sweep (tests/integration/interrupt_sweep.py) interrupts one command line at many points of xlatools' own
code, one point per try, in one process: every 150th function call, and each start or stop of a process
(where a Ctrl-C once split the start of a run's program from its keeping: exit 70, the program left running).
The start-up cases send the signal while `xlatools.__main__` imports the command line's modules.
Cost: about 15-25 s on 2 cores (two sweeps of a 0.2 s program, about 20 tries each; four start-ups).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = "import time\ntime.sleep(0.2)\n"
WINDOWS = ["run/child.py:__init__", "run/process.py:_stop", "proctree.py:_end_trees", "bundle.py:bundle_session"]


def _sweep(tmp_path: Path, probe_cache: Path, sig: str, *argv: str) -> list[dict]:
    (tmp_path / "prog.py").write_text(PROGRAM)
    out = tmp_path / "sweep.json"
    env = {**os.environ, "XLATOOLS_CACHE_DIR": str(probe_cache), "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.integration.interrupt_sweep", str(out), sig, "150", *WINDOWS, "--", *argv]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def _check(tries: list[dict]) -> None:
    base, *interrupted = tries
    assert base["code"] == 0 and set(base["records"].values()) == {"ok"}, base
    assert len(interrupted) >= 10 and any(t["entered"] == "run/child.py:__init__" for t in interrupted), interrupted
    for t in interrupted:
        assert t["code"] == 130, t  # never 70 (a bug of ours), never the program's own status
        assert t["alive"] == [], t  # every process it started is gone
        assert set(t["records"].values()) <= {"interrupted", "ok"}, t  # ok: the bundle ended before the signal
    assert sum("interrupted" in t["records"].values() for t in interrupted) >= len(interrupted) // 2


def test_ctrl_c_at_any_point_of_a_run_is_130(tmp_path, probe_cache, jax_python):
    _check(_sweep(tmp_path, probe_cache, "SIGINT", "run", "prog.py", "--out", "runs"))


def test_sigterm_at_any_point_of_a_two_process_run_is_130(tmp_path, probe_cache, jax_python):
    """Two processes: also between the first start and the second, and while the first is stopped."""
    tries = _sweep(tmp_path, probe_cache, "SIGTERM", "run", "prog.py", "--processes", "2", "--out", "runs")
    _check(tries)
    assert sum(t["entered"] == "run/child.py:__init__" for t in tries) >= 2  # each process's start


STARTING = """
import os, signal, sys
SIG = getattr(signal, sys.argv[1])
class SignalOnImport:  # the signal arrives while the command line's modules load
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            os.kill(os.getpid(), SIG)
        return None
sys.meta_path.insert(0, SignalOnImport())
sys.argv = ["xlatools", "run", "--json", "prog.py"]
from xlatools.__main__ import entry
entry()
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupt_while_starting_is_130_with_the_json_error(tmp_path, sig):
    done = subprocess.run(
        [sys.executable, "-c", STARTING, sig],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert done.returncode == 130, done.stderr
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"] == {
        "type": "Interrupted",
        "exit_code": 130,
        "message": "interrupted",
        "hint": None,
        "problems": [],
        "details": [],
    }
