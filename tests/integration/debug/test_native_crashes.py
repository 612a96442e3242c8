"""Native backtraces of crashed programs: `xlatools run` of a program that segfaults or aborts
leaves native-backtrace.txt (every thread's frames from gdb, plus the Python traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SEGFAULT = "import ctypes\n\ndef deref():\n    ctypes.string_at(0)\n\nderef()\n"
ABORT_IN_JAX = """\
import os
import jax, jax.numpy as jnp

print(jax.jit(lambda x: x + 1)(jnp.ones(3)), flush=True)
os.abort()
"""


def _crashed_run(xl, tmp_path, name, source, signal, env=None):
    (tmp_path / name).write_text(source)
    done = xl("run", name, "--json", timeout=600, env=env or {})
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["signal"] == signal
    bundle = Path(summary["bundle"])
    assert any("native backtrace of the crash" in note for note in summary["notes"])
    assert summary["native_backtrace"] == "native-backtrace.txt"
    return bundle, (bundle / "native-backtrace.txt").read_text()


@pytest.mark.parametrize("shell", [None, ""], ids=["waits-in-sh", "waits-in-python"])
def test_segfault_leaves_native_frames_and_python_traceback(xl, gdb, tmp_path, shell):
    env = {} if shell is None else {"XLATOOLS_CRASH_WATCHER_SHELL": shell}  # "": no shell (one without /bin/sh)
    bundle, text = _crashed_run(xl, tmp_path, "segv.py", SEGFAULT, "SIGSEGV", env)
    assert "#0 " in text and "string_at" in text and "<signal handler called>" in text
    assert 'segv.py", line 4 in deref' in text
    # The program's stderr still shows faulthandler's report, as it would without xlatools.
    assert "Fatal Python error: Segmentation fault" in (bundle / "stderr.log").read_text()
    assert "native-backtrace.txt" in [f["path"] for f in json.loads((bundle / "manifest.json").read_text())["files"]]


def test_abort_after_jax_shows_every_thread_with_jaxlib_symbols(xl, gdb, tmp_path):
    bundle, text = _crashed_run(xl, tmp_path, "abort.py", ABORT_IN_JAX, "SIGABRT")
    assert text.count("\nThread ") >= 2, "every thread, not just the crashing one"
    assert "libjax_common.so" in text and "abort" in text
    assert 'abort.py", line 5' in text
    assert "killed by SIGABRT" in (bundle / "summary.txt").read_text()


def test_no_backtrace_when_turned_off_and_none_on_success(xl, gdb, tmp_path):
    (tmp_path / "segv.py").write_text(SEGFAULT)
    done = xl("run", "segv.py", "--json", env={"XLATOOLS_NATIVE_BACKTRACE": "0"})
    assert not (Path(json.loads(done.stdout)["bundle"]) / "native-backtrace.txt").exists()
    (tmp_path / "ok.py").write_text(
        "import os, sys\nprint(os.environ.get('PYTHONPATH', '-'), 'sitecustomize' in sys.modules)\n"
    )
    done = xl("run", "ok.py", "--json", env={"PYTHONPATH": "/somewhere"})
    bundle = Path(json.loads(done.stdout)["bundle"])
    assert done.returncode == 0 and not (bundle / "native-backtrace.txt").exists()
    assert "native_backtrace" not in json.loads((bundle / "manifest.json").read_text())
    # The program sees the PYTHONPATH it was given, not the hook's.
    assert (bundle / "stdout.log").read_text().split()[0] == "/somewhere"
