"""Checks for native debugging (pure: facts in, Check out): gdb, for crash backtraces and
`xlatools debug`, and whether this machine lets a debugger attach (ptrace)."""

from __future__ import annotations

from xlatools.doctor.model import Check, fail, ok, warn
from xlatools.vocab import CheckStatus

GDB_HINT = "install Debian's gdb (apt-get install gdb), or point XLATOOLS_GDB at one (CUDA's cuda-gdb works too)"
PTRACE = "ptrace (debugger attach)"
# Yama's kernel.yama.ptrace_scope: the verdict and what it means.
_SCOPES = {
    "0": (CheckStatus.OK, "classic ptrace permissions"),
    "1": (CheckStatus.OK, "restricted to descendants; xlatools' crash watcher is declared with PR_SET_PTRACER"),
    "2": (CheckStatus.WARN, "only processes with CAP_SYS_PTRACE may attach"),
    "3": (CheckStatus.FAIL, "no process may attach"),
}


def check_gdb(gdb: str | None, version: str | None, found: str = "") -> Check:
    """`found`: where the debugger was found, in words (debug.gdb.locate_gdb)."""
    if gdb is None:
        return warn(
            "gdb",
            f"not found ({found or 'no gdb on PATH'}): crashes leave only Python tracebacks, "
            "`xlatools debug` cannot run",
            GDB_HINT,
        )
    return ok("gdb", f"debugger {gdb} ({found or 'found'}): {version or 'unknown version'}")


def check_ptrace(scope: str | None, attach_error: str | None) -> Check:
    """`scope`: Yama's ptrace_scope (None without Yama); `attach_error`: why attaching to a child failed."""
    if attach_error is not None:
        return fail(
            PTRACE,
            f"attaching to a child process fails: {attach_error} (ptrace_scope {scope})",
            "run the container with --cap-add=SYS_PTRACE (and --security-opt seccomp=unconfined on old "
            "Docker), or as root: sysctl kernel.yama.ptrace_scope=1",
        )
    status, words = (
        _SCOPES.get(scope, (CheckStatus.OK, "no Yama restriction")) if scope else (CheckStatus.OK, "no Yama")
    )
    evidence = (
        f"ptrace_scope {scope}: {words}; attaching to a child works"
        if scope
        else f"{words}; attaching to a child works"
    )
    fix = "" if status == CheckStatus.OK else "sysctl kernel.yama.ptrace_scope=1 (or run as root / with CAP_SYS_PTRACE)"
    return Check(PTRACE, status, evidence, fix)
