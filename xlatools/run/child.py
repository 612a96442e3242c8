"""One process of a group that the runner (run/process.py) watches: its spec, its start in a session of its
own, its pipes drained into its logs (`Tee`), when it ended, and whether it hangs after a fatal line."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from xlatools.vocab import ProcessStatus

# A line that says the process is dying: Python's uncaught-exception traceback, absl/glog FATAL, CHECK, C++ abort.
FATAL = re.compile(
    rb"^(Traceback \(most recent call last\):|Fatal Python error:|F\d{4} \d\d:\d\d:\d\d|"
    rb"terminate called after throwing)|Check failed:",
    re.MULTILINE,
)
_TAIL_BYTES = 8192


@dataclass(frozen=True)
class Spec:
    """One process to run: its command, full environment, logs and terminal streams (None: not echoed)."""

    argv: list[str]
    env: dict[str, str]
    stdout: Path
    stderr: Path
    echo_out: BinaryIO | None = None
    echo_err: BinaryIO | None = None


class Tee(threading.Thread):
    """Copy one pipe to a log file and (while it can) to a terminal stream; keeps the last bytes, the
    time of the last output and of the first fatal line.

    A log write that fails (disk full) is remembered, not raised: the pipe keeps being
    drained so the program never blocks, and the runner stops the run."""

    def __init__(self, pipe: BinaryIO, log: BinaryIO, echo: BinaryIO | None, wake: threading.Event):
        super().__init__(daemon=True)
        self.pipe, self.log, self.echo, self.wake = pipe, log, echo, wake
        self.error: OSError | None = None
        self.tail = b""
        self.last_output = time.monotonic()
        self.fatal_at: float | None = None

    def run(self) -> None:
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.last_output = time.monotonic()
            if self.fatal_at is None and FATAL.search(self.tail[-200:] + chunk):
                self.fatal_at = self.last_output
            self.tail = (self.tail + chunk)[-_TAIL_BYTES:]
            self._write(chunk)
        self._write(None)

    def last_lines(self, count: int = 8) -> list[str]:
        return self.tail.decode("utf-8", "replace").splitlines()[-count:]

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


class Child:
    """One started process: its Popen, a Tee per pipe and a waiter thread; the runner sets its status."""

    def __init__(self, spec: Spec, cwd: str, stack: ExitStack, wake: threading.Event):
        out_log, err_log = stack.enter_context(open(spec.stdout, "wb")), stack.enter_context(open(spec.stderr, "wb"))
        self.popen = subprocess.Popen(
            spec.argv,
            cwd=cwd,
            env=spec.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.spec, self.wake = spec, wake
        self.tees = [
            Tee(self.popen.stdout, out_log, spec.echo_out, wake),
            Tee(self.popen.stderr, err_log, spec.echo_err, wake),
        ]
        self.ended: float | None = None
        self.status: ProcessStatus | None = None
        self.hung: float | None = None
        self.samples: list[tuple[float, float]] = []  # (when, CPU seconds) once it printed a fatal line
        self.waiter = threading.Thread(target=self._wait, daemon=True)
        for thread in (*self.tees, self.waiter):
            thread.start()

    def _wait(self) -> None:
        self.popen.wait()
        self.ended = time.monotonic()
        self.wake.set()

    def silent_and_idle_after_fatal(self, now: float, quiet: float) -> bool:
        """It printed a fatal line, then nothing for `quiet` s, and used under 10% of a core meanwhile."""
        if not any(t.fatal_at for t in self.tees):
            return False
        self.samples = [s for s in self.samples if s[0] >= now - 2 * quiet] + [(now, _cpu_seconds(self.popen.pid))]
        if now - max(t.last_output for t in self.tees) < quiet:
            return False
        before = [s for s in self.samples if s[0] <= now - quiet]
        if not before:
            return False
        (then, used), (_, cpu) = before[-1], self.samples[-1]
        return cpu - used < 0.1 * (now - then)


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0
