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

from xlatools.errors import Interrupted, TimedOut
from xlatools.proctree import end_tree, signal_tree, sigterm_as_interrupt


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
            with sigterm_as_interrupt():
                if on_start is not None:
                    on_start(proc)
                try:
                    proc.wait(timeout=timeout)
                    # Children the program left behind in its group would hold our pipes open.
                    signal_tree(proc.pid, [], signal.SIGKILL)
                except subprocess.TimeoutExpired:
                    status = "timeout"
                    end_tree(proc)
        except KeyboardInterrupt:
            status = "interrupted"
            end_tree(proc)
        except BaseException:
            end_tree(proc)
            raise
        finally:
            for tee in tees:
                tee.join(timeout=10)  # pipes close once the whole tree is gone
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()
    returncode = proc.returncode
    if status is None:
        status = "ok" if returncode == 0 else "failed"
    exit_code = {"timeout": TimedOut.exit_code, "interrupted": Interrupted.exit_code}.get(status)
    if exit_code is None:
        exit_code = returncode if returncode >= 0 else 128 - returncode
    return RunResult(status, exit_code, returncode, round(time.monotonic() - t0, 3), started, utc_now())
