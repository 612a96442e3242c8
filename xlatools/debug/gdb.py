"""Finding gdb and what the machine lets it do (ptrace), for sessions, crash capture and doctor."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import EnvironmentMissing

PROBES = Path(__file__).resolve().parent / "probes"
HOOK_DIR = PROBES / "hook"
SESSION_SCRIPT = PROBES / "gdb_session.py"
INSTALL_HINT = "install Debian's gdb (apt-get install gdb), or point XLATOOLS_GDB at one"
_SCOPES = {
    "0": ("ok", "classic ptrace permissions"),
    "1": ("ok", "restricted to descendants; xlatools' crash watcher is declared with PR_SET_PTRACER"),
    "2": ("warn", "only processes with CAP_SYS_PTRACE may attach"),
    "3": ("fail", "no process may attach"),
}


def find_gdb(env: dict[str, str] | None = None) -> str | None:
    """XLATOOLS_GDB, else gdb on PATH."""
    env = os.environ if env is None else env
    named = env.get("XLATOOLS_GDB")
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("gdb", path=env.get("PATH"))


def require_gdb() -> str:
    gdb = find_gdb()
    if gdb is None:
        raise EnvironmentMissing("gdb was not found", hint=INSTALL_HINT)
    return gdb


def gdb_version(gdb: str) -> str | None:
    try:
        done = subprocess.run([gdb, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    first = done.stdout.splitlines()[0] if done.stdout else ""
    return first.strip() or None


@dataclass(frozen=True)
class PtraceFacts:
    status: str  # ok, warn, fail
    evidence: str
    fix: str = ""


def ptrace_facts(scope_file: Path = Path("/proc/sys/kernel/yama/ptrace_scope")) -> PtraceFacts:
    """Whether a debugger may attach here: Yama's scope, then a real attach to a child of ours
    (containers' seccomp profiles and missing CAP_SYS_PTRACE show up only there)."""
    try:
        scope = scope_file.read_text().strip()
    except OSError:
        scope = None
    status, words = _SCOPES.get(scope, ("ok", "no Yama restriction")) if scope is not None else ("ok", "no Yama")
    error = _attach_error()
    if error is not None:
        return PtraceFacts("fail", f"attaching to a child process fails: {error} (ptrace_scope {scope})",
                           "run the container with --cap-add=SYS_PTRACE (and --security-opt seccomp=unconfined on old "
                           "Docker), or as root: sysctl kernel.yama.ptrace_scope=1")
    fix = "" if status == "ok" else "sysctl kernel.yama.ptrace_scope=1 (or run as root / with CAP_SYS_PTRACE)"
    return PtraceFacts(status, f"ptrace_scope {scope}: {words}; attaching to a child works" if scope else
                       f"{words}; attaching to a child works", fix)


def _attach_error() -> str | None:
    """PTRACE_SEIZE a short-lived child (it is never stopped); the error text, or None."""
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
