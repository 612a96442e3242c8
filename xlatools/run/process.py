"""Execute a program: live tee of its output, timeout, Ctrl-C, process-tree clean-up.

stdout and stderr are drained by one thread each, so a child that writes tens
of thousands of VLOG lines to stderr never blocks on a full pipe while we wait
on stdout. The child starts in its own session (process group): on timeout,
Ctrl-C or a log we cannot write (disk full), the whole group is terminated,
then killed, together with descendants that left the group, so no grandchild
outlives the run. The main thread waits with a blocking wait (no polling delay
after the program exits); a watchdog thread handles the timeout, log-write
errors and, in quiet runs, a heartbeat line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from xlatools.proctree import end_tree, signal_tree, sigterm_as_interrupt
from xlatools.vocab import Status

if TYPE_CHECKING:
    from xlatools.console import Reporter


@dataclass(frozen=True)
class ProgramResult:
    status: Status  # error: xlatools could not keep the run's records (disk full): the program was stopped
    returncode: int | None  # the program's own status (negative: killed by that signal)
    duration: float
    started: str
    finished: str
    error: str | None = None  # what went wrong when status is "error"

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    def describe(self) -> str:
        """The program's own outcome in words: `exit 3`, `killed by SIGSEGV`."""
        if self.signal_name:
            return f"killed by {self.signal_name}"
        return f"exit {self.returncode}" if self.returncode is not None else "not started"


class Tee(threading.Thread):
    """Copy one pipe to a log file and (while it can) to a terminal stream.

    A log write that fails (disk full) is remembered, not raised: the pipe keeps being
    drained so the program never blocks, and the watchdog stops the run."""

    def __init__(self, pipe: BinaryIO, log: BinaryIO, echo: BinaryIO | None, wake: threading.Event):
        super().__init__(daemon=True)
        self.pipe, self.log, self.echo, self.wake = pipe, log, echo, wake
        self.error: OSError | None = None

    def run(self) -> None:
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self._write(chunk)
        self._write(None)

    def _write(self, chunk: bytes | None) -> None:
        if self.error is None:
            try:
                self.log.write(chunk) if chunk is not None else self.log.flush()
            except OSError as exc:
                self.error = exc
                self.wake.set()
        if chunk is not None and self.echo is not None:
            try:
                self.echo.write(chunk)
                self.echo.flush()
            except (OSError, ValueError):
                self.echo = None  # the terminal went away; keep logging


_RUNNING: set["_Watchdog"] = set()  # the watchdogs of programs running now, in any thread
_RUNNING_LOCK = threading.Lock()


def interrupt_running() -> None:
    """Stop every program `execute` is running now, in any thread, as Ctrl-C would (status interrupted).

    For work that runs programs in worker threads (bisect --jobs): Ctrl-C and SIGTERM reach the main
    thread only, and the programs run in sessions of their own."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for watchdog in running:
        watchdog.interrupt()


class _Watchdog(threading.Thread):
    """Stops the program on timeout, a failed log write or `interrupt`; prints a heartbeat in quiet runs."""

    def __init__(self, proc: subprocess.Popen, tees: list[Tee], logs: list[Path], timeout: float | None,
                 heartbeat: float | None, reporter: Reporter | None, wake: threading.Event):
        super().__init__(daemon=True)
        self.proc, self.tees, self.logs, self.wake = proc, tees, logs, wake
        self.deadline = time.monotonic() + timeout if timeout is not None else None
        self.heartbeat = heartbeat if reporter is not None else None
        self.reporter = reporter
        self.reason: Status | None = None
        self.done = threading.Event()
        self.interrupted = threading.Event()

    def interrupt(self) -> None:
        self.interrupted.set()
        self.wake.set()

    def run(self) -> None:
        start = time.monotonic()
        next_beat = start + self.heartbeat if self.heartbeat else None
        while not self.done.is_set():
            now = time.monotonic()
            waits = [t - now for t in (self.deadline, next_beat) if t is not None]
            self.wake.wait(max(0.0, min(waits)) if waits else None)
            self.wake.clear()
            if self.done.is_set():
                return
            now = time.monotonic()
            if self.interrupted.is_set():
                self.reason = Status.INTERRUPTED
                end_tree(self.proc)
                return
            if any(tee.error for tee in self.tees) or (self.deadline is not None and now >= self.deadline):
                self.reason = Status.ERROR if any(tee.error for tee in self.tees) else Status.TIMEOUT
                end_tree(self.proc)
                return
            if next_beat is not None and now >= next_beat:
                sizes = ", ".join(f"{p.name} {_size(p)}" for p in self.logs)
                self.reporter.heartbeat(f"running {now - start:.0f} s; {sizes}")
                next_beat = now + self.heartbeat

    def stop(self) -> None:
        self.done.set()
        self.wake.set()


def _size(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


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
    heartbeat: float | None = None,
    reporter: Reporter | None = None,
) -> ProgramResult:
    """Run `argv` to its end (or timeout / Ctrl-C / a failed log write) with its output logged;
    a heartbeat through `reporter` every `heartbeat` seconds."""
    from xlatools.bundle import utc_now

    started = utc_now()
    t0 = time.monotonic()
    wake = threading.Event()
    with open(stdout_log, "wb") as out_log, open(stderr_log, "wb") as err_log:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        tees = [Tee(proc.stdout, out_log, echo_out, wake), Tee(proc.stderr, err_log, echo_err, wake)]
        watchdog = _Watchdog(proc, tees, [stdout_log, stderr_log], timeout, heartbeat, reporter, wake)
        for thread in (*tees, watchdog):
            thread.start()
        with _RUNNING_LOCK:
            _RUNNING.add(watchdog)
        status: Status | None = None
        try:
            with sigterm_as_interrupt():
                if on_start is not None:
                    on_start(proc)
                proc.wait()
                # Children the program left behind in its group would hold our pipes open.
                signal_tree(proc.pid, [], signal.SIGKILL)
        except KeyboardInterrupt:
            status = Status.INTERRUPTED
            end_tree(proc)
        except BaseException:
            end_tree(proc)
            raise
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(watchdog)
            watchdog.stop()
            watchdog.join(timeout=10)
            for tee in tees:
                tee.join(timeout=10)  # pipes close once the whole tree is gone
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()
    write_error = next((tee.error for tee in tees if tee.error), None)
    status = status or watchdog.reason or (Status.OK if proc.returncode == 0 else Status.FAILED)
    error = None
    if status == Status.ERROR and write_error is not None:
        error = f"cannot write the program's log: {write_error.strerror or write_error}"
    return ProgramResult(status, proc.returncode, round(time.monotonic() - t0, 3), started, utc_now(), error)
