"""Execute a program: live tee of its output, timeout, Ctrl-C, process-tree clean-up.

stdout and stderr are drained by one thread each, so a child that writes tens
of thousands of VLOG lines to stderr never blocks on a full pipe while we wait
on stdout. The child starts in its own session (process group): on timeout or
Ctrl-C the whole group is terminated, then killed, together with descendants
that left the group (found through /proc), so no grandchild outlives the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

GRACE_SECONDS = 3.0


@dataclass
class RunResult:
    status: str  # ok, failed, timeout, interrupted
    exit_code: int  # what xlatools exits with
    returncode: int | None  # the program's own status (negative: killed by that signal)
    duration: float
    started: str
    finished: str


class _Tee(threading.Thread):
    """Copy one pipe to a log file and (while it can) to a terminal stream."""

    def __init__(self, pipe: BinaryIO, log: BinaryIO, echo: BinaryIO | None):
        super().__init__(daemon=True)
        self.pipe, self.log, self.echo = pipe, log, echo

    def run(self) -> None:
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.log.write(chunk)
            if self.echo is not None:
                try:
                    self.echo.write(chunk)
                    self.echo.flush()
                except (OSError, ValueError):
                    self.echo = None  # the terminal went away; keep logging
        self.log.flush()


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields start after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal_tree(pid: int, pgid: int, extra: list[int], sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for other in extra:
        try:
            os.kill(other, sig)
        except (ProcessLookupError, PermissionError):
            pass


def end_tree(proc: subprocess.Popen, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the program's whole tree, then SIGKILL whatever is left after `grace` seconds."""
    tree = descendants(proc.pid)
    _signal_tree(proc.pid, proc.pid, tree, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        alive = [p for p in tree if _alive(p)]
        if proc.poll() is not None and not alive:
            break
        time.sleep(0.05)
    tree = sorted(set(tree) | set(descendants(proc.pid)))
    _signal_tree(proc.pid, proc.pid, tree, signal.SIGKILL)
    proc.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return b") Z " not in handle.read()  # a zombie is gone, only not reaped
    except OSError:
        return False


class _Terminated(Exception):
    """SIGTERM (a CI job cancelled): handled like Ctrl-C."""


def execute(
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    stdout_log: Path,
    stderr_log: Path,
    timeout: float | None,
    echo_out: BinaryIO | None,
    echo_err: BinaryIO | None,
    on_start=None,
) -> RunResult:
    from xlatools.bundle import utc_now

    started = utc_now()
    t0 = time.monotonic()
    previous_term = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):
        raise _Terminated()

    with open(stdout_log, "wb") as out_log, open(stderr_log, "wb") as err_log:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        tees = [_Tee(proc.stdout, out_log, echo_out), _Tee(proc.stderr, err_log, echo_err)]
        for tee in tees:
            tee.start()
        status = None
        try:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, on_sigterm)
            if on_start is not None:
                on_start(proc)
            try:
                proc.wait(timeout=timeout)
                # Children the program left behind in its group would hold our pipes open.
                _signal_tree(proc.pid, proc.pid, [], signal.SIGKILL)
            except subprocess.TimeoutExpired:
                status = "timeout"
                end_tree(proc)
        except (KeyboardInterrupt, _Terminated):
            status = "interrupted"
            end_tree(proc)
        except BaseException:
            end_tree(proc)
            raise
        finally:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, previous_term)
            for tee in tees:
                tee.join(timeout=10)  # pipes close once the whole tree is gone
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()
    returncode = proc.returncode
    if status is None:
        status = "ok" if returncode == 0 else "failed"
    exit_code = {"timeout": 124, "interrupted": 130}.get(status)
    if exit_code is None:
        exit_code = returncode if returncode >= 0 else 128 - returncode
    return RunResult(status, exit_code, returncode, round(time.monotonic() - t0, 3), started, utc_now())
