"""A child process of the program died by a fatal signal while the program itself did not (a check script
that runs the crashing program in a subprocess and exits 1): found in the run's stderr log by the lines
Python's fault handler writes (run sets PYTHONFAULTHANDLER=1, and children inherit it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from xlatools.records.hang import ChildCrash
from xlatools.records.run import RunManifest

SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Floating-point exception": "SIGFPE",
    "Floating point exception": "SIGFPE",
    "Bus error": "SIGBUS",
    "Illegal instruction": "SIGILL",
}
_FATAL = re.compile(r"^Fatal Python error: (" + "|".join(map(re.escape, SIGNALS)) + r")\s*$")
SCAN_BYTES = 4 << 20  # of the log's end: a crash ends a child, and logs can be gigabytes


def find_child_crash(bundle: Path, log: str) -> ChildCrash | None:
    """The last fault-handler report in `bundle/log` (its end), or None."""
    from xlatools.fsutil import tail_bytes

    lines = tail_bytes(Path(bundle) / log, SCAN_BYTES).decode("utf-8", "replace").splitlines()
    starts = [i for i, line in enumerate(lines) if _FATAL.match(line)]
    if not starts:
        return None
    first = starts[-1]
    said = _FATAL.match(lines[first])
    assert said is not None
    block = [lines[first]]
    for line in lines[first + 1 : first + 60]:
        if line.startswith(("Extension modules:", "Fatal Python error:")):
            break
        block.append(line)
    while block and not block[-1].strip():
        block.pop()
    return ChildCrash(signal=SIGNALS[said.group(1)], log=log, traceback=block)


def name_crashes(record: RunManifest, bundle: Path, stderr_log: Path) -> None:
    """A program that died by a fatal signal left native-backtrace.txt (debug.crash): the record names it. One
    that failed without a signal of its own may have had a child die by one: its fault handler's report."""
    from xlatools.debug.crash import FILE, backtrace_note

    note = backtrace_note(bundle)
    if note:
        record.native_backtrace = FILE
        record.notes.append(note)
    if record.signal is None and record.returncode not in (0, None):
        crash = find_child_crash(bundle, os.path.relpath(stderr_log, bundle))
        if crash is not None:
            record.child_crash = crash
            record.notes.append(
                f"a process the program started died by {crash.signal} (its Python stack in {crash.log})"
            )
