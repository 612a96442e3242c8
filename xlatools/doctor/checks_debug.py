"""Checks for native debugging: gdb (crash backtraces, `xlatools debug`) and whether ptrace may attach."""

from __future__ import annotations

from typing import Mapping

from xlatools.doctor.model import Check, ok, warn


def check_gdb(env: Mapping[str, str]) -> Check:
    from xlatools.debug.gdb import INSTALL_HINT, find_gdb, gdb_version

    gdb = find_gdb(dict(env))
    if gdb is None:
        return warn("gdb", "not found: crashes leave only Python tracebacks, `xlatools debug` cannot run", INSTALL_HINT)
    return ok("gdb", f"{gdb_version(gdb) or 'unknown version'} ({gdb})")


def check_ptrace() -> Check:
    from xlatools.debug.gdb import ptrace_facts

    facts = ptrace_facts()
    return Check("ptrace (debugger attach)", facts.status, facts.evidence, facts.fix)
