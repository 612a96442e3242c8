"""Interrupt one xlatools command line at many points of its own code, one point per try, all in one process.

    python -m tests.integration.interrupt_sweep OUT.json SIGNAL STRIDE [FUNCTION...] -- XLATOOLS-ARGS...

A first try runs the command uninterrupted (the imports it makes late are done then), a second one notes every
function call xlatools' code makes (main thread).
Then one try per point: every STRIDE-th call, and each call of a FUNCTION (`run/child.py:__init__`) with the
two calls after it. Try k sends SIGNAL to this process as xlatools' code makes its k-th call; the signal is
handled where it lands, between two steps of the command, as a real Ctrl-C or SIGTERM would be. Each try runs
`cli.main` as the program does (xlatools/__main__.py's handlers around it: an interrupt after the command
ended is exit 130 at once), then records its exit code, the function that was entered, whether a process it
started is still alive, and the status of every manifest and bisect state it wrote. Nothing in xlatools reads
a test variable: the signal comes from outside its code, from a profile hook of this process. One process for
every try: the command line's imports are paid once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path


BUNDLE = re.compile(r"^\d{8}T\d{6}Z-.+-[0-9a-f]{6}$")  # bundle.Bundle.create's folder names


class _Exited(BaseException):
    """xlatools/__main__.py would have ended the program here with exit 130 (os._exit: no handler sees it)."""


_EXITED = [False]


def _out_now(signum, frame):
    _EXITED[0] = True  # the program would be gone now, even where Python drops what a handler raises (a finalizer)
    raise _Exited


def _live_children() -> list[int]:
    import psutil

    me = psutil.Process()
    found = []
    for child in me.children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def _records(root: Path) -> dict[str, str]:
    """Every manifest.json and bisect.json under `root` (not through links): path -> status; a bundle folder
    without a manifest is `no manifest`."""
    found = {}
    for dirpath, _, files in os.walk(root):
        if BUNDLE.match(Path(dirpath).name) and "manifest.json" not in files:
            found[str(Path(dirpath).relative_to(root))] = "no manifest"
        for name in files:
            if name in ("manifest.json", "bisect.json"):
                path = Path(dirpath) / name
                try:
                    found[str(path.relative_to(root))] = json.loads(path.read_text()).get("status")
                except (OSError, ValueError):
                    found[str(path.relative_to(root))] = "unreadable"
    return found


def _after_main() -> None:
    """A Python call, where CPython runs the handler of a signal that arrived as main() returned."""


def one_try(args: list[str], at: int, sig: int, root: Path, seen: list[str] | None = None) -> dict:
    """Run the command, interrupted at its `at`-th call (0: never; the calls are noted in `seen`)."""
    import xlatools
    from xlatools import cli

    package = os.path.dirname(xlatools.__file__)
    calls, entered = [0], [None]

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            calls[0] += 1
            if seen is not None:
                seen.append(f"{Path(frame.f_code.co_filename).relative_to(package)}:{frame.f_code.co_name}")
            if calls[0] == at:
                entered[0] = f"{Path(frame.f_code.co_filename).relative_to(package)}:{frame.f_code.co_name}"
                os.kill(os.getpid(), sig)

    _EXITED[0] = False
    previous = {s: signal.signal(s, _out_now) for s in (signal.SIGINT, signal.SIGTERM)}
    before = set(_records(root))
    sys.setprofile(hook)
    try:
        try:
            code = cli.main(args)
        finally:
            sys.setprofile(None)
        _after_main()  # as the program flushes its streams: a signal still pending is handled there
    except _Exited:
        code = 130
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    code = 130 if _EXITED[0] else code
    deadline = time.monotonic() + 5  # a stopped tree is reaped by then; a leak stays
    while (alive := _live_children()) and time.monotonic() < deadline:
        time.sleep(0.1)
    records = {k: v for k, v in _records(root).items() if k not in before}
    return {"at": at, "calls": calls[0], "entered": entered[0], "code": code, "alive": alive, "records": records}


def main() -> None:
    split = sys.argv.index("--")
    out, sig, stride, functions = sys.argv[1], getattr(signal, sys.argv[2]), int(sys.argv[3]), sys.argv[4:split]
    args = sys.argv[split + 1 :]
    seen: list[str] = []
    one_try(args, 0, sig, Path.cwd())  # imports what the command imports late: the next tries make the same calls
    tries = [one_try(args, 0, sig, Path.cwd(), seen)]
    points = set(range(1, len(seen) + 1, stride))
    points |= {i + 1 + d for i, name in enumerate(seen) if name in functions for d in range(3)}
    for at in sorted(p for p in points if p <= len(seen)):
        result = one_try(args, at, sig, Path.cwd())
        tries.append(result)
        for pid in result["alive"]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    Path(out).write_text(json.dumps(tries, indent=1))


if __name__ == "__main__":
    main()
