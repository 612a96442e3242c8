"""Finding gdb and what the machine lets a debugger do (ptrace): for sessions, crash capture and doctor."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from xlatools.errors import EnvironmentMissing

PROBES = Path(__file__).resolve().parent / "probes"
HOOK_DIR = PROBES / "hook"
SESSION_SCRIPT = PROBES / "gdb_session.py"


def find_gdb(env: Mapping[str, str] | None = None) -> str | None:
    """XLATOOLS_GDB, else gdb on PATH."""
    env = os.environ if env is None else env
    named = env.get("XLATOOLS_GDB")
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("gdb", path=env.get("PATH"))


def require_gdb() -> str:
    gdb = find_gdb()
    if gdb is None:
        raise EnvironmentMissing("gdb was not found", hint="install Debian's gdb (apt-get install gdb), or point "
                                 "XLATOOLS_GDB at one; `xlatools doctor` checks it")
    if not is_gdb(gdb):  # e.g. XLATOOLS_GDB=/bin/true: say so now, not "gdb did not run the session" later
        named = " (XLATOOLS_GDB)" if os.environ.get("XLATOOLS_GDB") else ""
        raise EnvironmentMissing(f"{gdb}{named} is not a working gdb: `{gdb} --version` does not say GNU gdb",
                                 hint="point XLATOOLS_GDB at gdb or cuda-gdb, or unset it to use gdb from PATH")
    return gdb


def is_gdb(gdb: str) -> bool:
    """gdb and cuda-gdb both name themselves GNU gdb in their --version text."""
    try:
        done = subprocess.run([gdb, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return "GNU gdb" in done.stdout


def gdb_version(gdb: str) -> str | None:
    try:
        from xlatools.proctree import run_captured

        done = run_captured([gdb, "--version"], timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    first = done.stdout.splitlines()[0] if done.stdout else ""
    return first.strip() or None


def ptrace_scope(scope_file: Path = Path("/proc/sys/kernel/yama/ptrace_scope")) -> str | None:
    """Yama's kernel.yama.ptrace_scope (0-3), None without Yama."""
    try:
        return scope_file.read_text().strip()
    except OSError:
        return None


def attach_error() -> str | None:
    """Why a debugger cannot attach here (the error text), or None: PTRACE_SEIZE a short-lived child
    (it is never stopped). Containers' seccomp profiles and a missing CAP_SYS_PTRACE show up only so."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    child = subprocess.Popen(["sleep", "5"])
    try:
        result = libc.ptrace(0x4206, child.pid, None, None)  # PTRACE_SEIZE
        return None if result == 0 else os.strerror(ctypes.get_errno())
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
