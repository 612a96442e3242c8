"""The one process runner: a program is a group of processes (a single program is a group of one).

Each process (run/child.py) runs in its own session with stdout and stderr drained by one thread each (a child
that writes tens of thousands of VLOG lines to stderr never blocks on a full pipe) into its logs,
and, when asked, echoed. One waiter thread per process notes when it ended, so the first process
to fail is known by time, not by id; the calling thread sleeps on one event that every waiter, tee
and `interrupt_running` sets, and decides:
- a process that failed stops the others at once (in a collective job they would otherwise wait
  for it until jax's own timeouts, minutes);
- with `fatal_quiet` (multi-process runs), a process that printed a fatal error (a Python
  traceback, a FATAL log line, a failed CHECK) and then stayed silent and idle (no output, almost no
  CPU) for that many seconds has failed too: it hangs at exit, as a jax process whose backend cannot
  start does, waiting for peers that wait for it;
- the timeout, Ctrl-C (and SIGTERM), `interrupt_running` or a log that cannot be written (disk
  full) stop every process still running; a heartbeat line is printed in quiet runs.
Whole process trees are stopped (terminate, then kill), so no grandchild outlives the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterator

from xlatools.proctree import end_trees, held_interrupts, signal_tree, sigterm_as_interrupt
from xlatools.run.child import Child, Spec
from xlatools.vocab import ProcessStatus, Status

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.run.hang.capture import StuckWatch

FATAL_QUIET_S = float(os.environ.get("XLATOOLS_FATAL_QUIET_S", "4"))  # multi-process runs: silent and idle this long


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
        from xlatools.proctree import signal_name

        return signal_name(self.returncode)

    def describe(self) -> str:
        """The program's own outcome in words: `exit 3`, `killed by SIGSEGV`."""
        if self.signal_name:
            return f"killed by {self.signal_name}"
        return f"exit {self.returncode}" if self.returncode is not None else "not started"


@dataclass
class Ended:
    """How one process of a group ended."""

    status: ProcessStatus
    returncode: int | None
    duration: float
    last_lines: list[str] = field(default_factory=list)  # its stderr's last lines
    hung: float | None = None  # seconds it sat silent and idle after a fatal line (then it was stopped)


@dataclass
class GroupRun:
    """What `run_processes` returns: the group's status (ok, failed, timeout, interrupted, error), the first
    process to fail (index), every process's end, and the error text of a log that could not be written."""

    status: Status
    first: int | None
    processes: list[Ended]
    started: str
    finished: str
    duration: float
    error: str | None = None


_RUNNING: set[threading.Event] = set()  # the events of groups running now, in any thread
_INTERRUPTED: set[threading.Event] = set()
_RUNNING_LOCK = threading.Lock()
_STOPPING = [0]  # > 0: inside `stopping_runs`: a group that starts now is interrupted at once


def interrupt_running() -> None:
    """Stop every program the runner runs now, in any thread, as Ctrl-C would (status interrupted).

    For work that runs programs in worker threads (bisect --jobs): Ctrl-C and SIGTERM reach the main
    thread only, and the programs run in sessions of their own."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
        _INTERRUPTED.update(running)
    for wake in running:
        wake.set()


@contextlib.contextmanager
def stopping_runs() -> Iterator[None]:
    """While the main thread waits for its worker threads after Ctrl-C: every program the runner runs, now or
    started meanwhile by a thread that had not seen the interrupt yet, is stopped as `interrupt_running` stops it."""
    with _RUNNING_LOCK:
        _STOPPING[0] += 1
    try:
        interrupt_running()
        yield
    finally:
        with _RUNNING_LOCK:
            _STOPPING[0] -= 1


def run_processes(
    specs: list[Spec],
    cwd: str,
    timeout: float | None,
    on_start: Callable | None = None,
    heartbeat: float | None = None,
    reporter: Reporter | None = None,
    fatal_quiet: float | None = None,
    watch: StuckWatch | None = None,
) -> GroupRun:
    """Run every process of `specs` to its end, or until the group must stop (see the module docstring).
    `on_start` gets the list of Popen objects once all started; `watch` (run/hang/) reads every process's
    stacks before a timeout stops them, and with its `stall` ends a run in which nothing moved that long."""
    from xlatools.bundle import utc_now

    started, t0, wake = utc_now(), time.monotonic(), threading.Event()
    procs: list[Child] = []
    status: Status | None = None
    with _RUNNING_LOCK:
        _RUNNING.add(wake)
        if _STOPPING[0]:
            _INTERRUPTED.add(wake)
    with ExitStack() as stack:
        try:
            with sigterm_as_interrupt():
                for spec in specs:
                    with held_interrupts():  # started and kept as one step: every started process is stopped
                        procs.append(Child(spec, cwd, stack, wake))
                if on_start is not None:
                    on_start([p.popen for p in procs])
                status = _watch(procs, wake, t0, timeout, heartbeat, reporter, fatal_quiet, watch)
        except KeyboardInterrupt:
            status = Status.INTERRUPTED
            _stop(procs, ProcessStatus.INTERRUPTED)
        except BaseException:
            _stop(procs, ProcessStatus.ERROR)
            raise
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(wake)
                _INTERRUPTED.discard(wake)
            for proc in procs:
                for tee in proc.tees:
                    tee.join(timeout=10)  # pipes close once the whole tree is gone
                for pipe in (proc.popen.stdout, proc.popen.stderr):
                    pipe.close()
    return _result(specs, procs, status, started, t0)


def _watch(
    procs: list[Child],
    wake: threading.Event,
    t0: float,
    timeout: float | None,
    heartbeat: float | None,
    reporter: Reporter | None,
    fatal_quiet: float | None,
    watch: StuckWatch | None = None,
) -> Status | None:
    """Wait until every process ended or the group must stop; the group's status when decided here."""
    deadline = t0 + timeout if timeout is not None else None
    next_beat = t0 + heartbeat if heartbeat and reporter is not None else None
    while True:
        now = time.monotonic()
        polls = [1.0] if fatal_quiet or (watch and watch.stall) else []
        waits = [t - now for t in (deadline, next_beat) if t is not None] + polls
        wake.wait(max(0.0, min(waits)) if waits else None)
        wake.clear()
        for proc in sorted(
            (p for p in procs if p.status is None and p.ended is not None), key=lambda p: p.ended or 0.0
        ):
            signal_tree(proc.popen.pid, [], signal.SIGKILL)  # what it left in its group would hold our pipes
            proc.status = ProcessStatus.OK if proc.popen.returncode == 0 else ProcessStatus.FAILED
        now = time.monotonic()
        hung = [
            p for p in procs if fatal_quiet and p.status is None and p.silent_and_idle_after_fatal(now, fatal_quiet)
        ]
        for proc in hung:
            proc.hung, proc.ended = now - max(t.last_output for t in proc.tees), now
        if hung or any(p.status == ProcessStatus.FAILED for p in procs):
            _stop(procs, ProcessStatus.STOPPED, failed=hung)  # one grace period for the hung and their peers
            return None
        if all(p.status is not None for p in procs):
            return None
        with _RUNNING_LOCK:
            interrupted = wake in _INTERRUPTED
        if interrupted:
            _stop(procs, ProcessStatus.INTERRUPTED)
            return Status.INTERRUPTED
        if any(tee.error for p in procs for tee in p.tees):
            _stop(procs, ProcessStatus.ERROR)
            return Status.ERROR
        if _stuck(procs, watch, now, deadline, t0):
            _stop(procs, ProcessStatus.TIMEOUT)
            return Status.TIMEOUT
        if next_beat is not None and now >= next_beat:
            reporter.heartbeat(f"running {now - t0:.0f} s; " + _progress(procs))
            next_beat = now + heartbeat


def _stuck(procs: list[Child], watch: StuckWatch | None, now: float, deadline: float | None, t0: float) -> bool:
    """The run must stop as a timeout: its deadline passed, or nothing moved for the watch's `stall` seconds
    (no output, no observer event); the watch reads every process's stacks first."""
    stall = watch.stall if watch is not None else None
    if deadline is not None and now >= deadline:
        trigger, reason = "timeout", f"timeout after {deadline - t0:g} s"
    elif stall and watch is not None:
        running = [p for p in procs if p.status is None]
        moved = watch.moved([(p.popen.pid, max(t.last_output for t in p.tees)) for p in running], t0)
        if now - moved < stall:
            return False
        trigger, reason = "stall", f"no progress for {now - moved:.0f} s (--stall {stall:g})"
    else:
        return False
    if watch is not None:
        alive = [(i if len(procs) > 1 else None, p.popen.pid) for i, p in enumerate(procs) if p.status is None]
        watch.capture(alive, trigger, reason)
    return True


def _progress(procs: list[Child]) -> str:
    if len(procs) == 1:
        return ", ".join(f"{path.name} {_size(path)}" for path in (procs[0].spec.stdout, procs[0].spec.stderr))
    return f"{sum(1 for p in procs if p.status is None)} of {len(procs)} processes still running"


def _stop(procs: list[Child], status: ProcessStatus, failed: list[Child] = ()) -> None:
    """End every process still running (one grace period for all); they get `status`, those in `failed` FAILED.
    One step that Ctrl-C does not split: it comes once every tree is gone and every status is set."""
    with held_interrupts():
        alive = [p for p in procs if p.status is None]
        end_trees([p.popen for p in alive])
        for proc in alive:
            proc.status = ProcessStatus.FAILED if proc in failed else status


def _result(specs: list[Spec], procs: list[Child], status: Status | None, started: str, t0: float) -> GroupRun:
    """The group's record: one `Ended` per spec, in order; a process that an interrupt kept from starting is
    `interrupted`, never started (no status)."""
    from xlatools.bundle import utc_now

    failed = sorted((p for p in procs if p.status == ProcessStatus.FAILED), key=lambda p: p.ended or 0.0)
    first = procs.index(failed[0]) if failed else None
    if status is None:
        status = Status.FAILED if first is not None else Status.OK
    ended = [
        Ended(
            p.status or ProcessStatus.ERROR,
            p.popen.returncode,
            round((p.ended or time.monotonic()) - t0, 3),
            p.tees[1].last_lines() if p.status == ProcessStatus.FAILED else [],
            p.hung,
        )
        for p in procs
    ]
    ended += [Ended(ProcessStatus.INTERRUPTED, None, 0.0) for _ in specs[len(procs) :]]
    write_error = next((tee.error for p in procs for tee in p.tees if tee.error), None)
    error = None
    if status == Status.ERROR and write_error is not None:
        error = f"cannot write the program's log: {write_error.strerror or write_error}"
    return GroupRun(status, first, ended, started, utc_now(), round(time.monotonic() - t0, 3), error)


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
    watch: StuckWatch | None = None,
) -> ProgramResult:
    """Run `argv` to its end (or timeout / Ctrl-C / a failed log write) with its output logged: a group of one.
    `on_start` gets the Popen object; a heartbeat through `reporter` every `heartbeat` seconds."""
    start = (lambda procs: on_start(procs[0])) if on_start is not None else None
    group = run_processes(
        [Spec(argv, env, Path(stdout_log), Path(stderr_log), echo_out, echo_err)],
        cwd,
        timeout,
        start,
        heartbeat,
        reporter,
        watch=watch,
    )
    return ProgramResult(
        group.status, group.processes[0].returncode, group.duration, group.started, group.finished, group.error
    )
