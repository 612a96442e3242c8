"""Run the processes of a multi-process run (`run --processes N`) to their end, as one program.

Every process runs in its own session with its output logged to `pI.stdout.log` / `pI.stderr.log`
(process 0's is also echoed). One thread per process waits for it and notes when it ended, so the
first process to fail is known by time, not by id. When one fails, the others are stopped at once:
in a collective job they would otherwise wait for it until jax's own timeouts (minutes). The run's
timeout, Ctrl-C (and SIGTERM) or a log that cannot be written stop every process still running.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Callable

from xlatools.proctree import end_trees, signal_tree, sigterm_as_interrupt
from xlatools.run.multiprocess import ProcessPlan
from xlatools.run.process import ProgramResult, Tee
from xlatools.vocab import ProcessStatus, Status

if TYPE_CHECKING:
    from xlatools.console import Reporter


@dataclass(frozen=True)
class ProcessResult:
    id: int
    status: ProcessStatus
    returncode: int | None  # negative: killed by that signal
    duration: float
    first_failure: bool = False

    @property
    def signal_name(self) -> str | None:
        return ProgramResult(Status.OK, self.returncode, 0, "", "").signal_name


@dataclass(frozen=True)
class GroupResult:
    run: ProgramResult  # the group as one program: the first failure's status, or ok
    processes: list[ProcessResult]
    first_failed: int | None

    def outcome(self) -> str:
        """The group's outcome in words, e.g. `process 1 failed first (exit 3); 1 other stopped`."""
        if self.first_failed is None:
            counts = {s: sum(1 for p in self.processes if p.status == s) for s in ProcessStatus}
            if self.run.status == Status.OK:
                return f"all {len(self.processes)} processes exit 0"
            still = counts[ProcessStatus.TIMEOUT] + counts[ProcessStatus.INTERRUPTED] + counts[ProcessStatus.STOPPED]
            return f"{self.run.status}: {still} of {len(self.processes)} processes still running"
        first = self.processes[self.first_failed]
        words = ProgramResult(Status.FAILED, first.returncode, 0, "", "").describe()
        stopped = sum(1 for p in self.processes if p.status == ProcessStatus.STOPPED)
        failed = sum(1 for p in self.processes if p.status == ProcessStatus.FAILED) - 1
        tail = (f"; {failed} other{'s' if failed != 1 else ''} failed" if failed else "") + \
               (f"; {stopped} other{'s' if stopped != 1 else ''} stopped" if stopped else "")
        return f"process {first.id} failed first ({words}){tail}"


class _Waiter(threading.Thread):
    """Waits for one process and notes when it ended."""

    def __init__(self, proc: subprocess.Popen, wake: threading.Event):
        super().__init__(daemon=True)
        self.proc, self.wake = proc, wake
        self.ended: float | None = None

    def run(self) -> None:
        self.proc.wait()
        self.ended = time.monotonic()
        self.wake.set()


@dataclass
class _Running:
    plan: ProcessPlan
    proc: subprocess.Popen
    tees: list[Tee]
    waiter: _Waiter
    status: ProcessStatus | None = None


def execute_group(plans: list[ProcessPlan], run_env: dict[str, str], cwd: str, timeout: float | None,
                  echo_out: BinaryIO | None, echo_err: BinaryIO | None, on_start: Callable | None = None,
                  heartbeat: float | None = None, reporter: Reporter | None = None) -> GroupResult:
    """Run every process of `plans` (bound) with `run_env` (the run's environment) plus its own part."""
    from xlatools.bundle import utc_now

    started, t0, wake = utc_now(), time.monotonic(), threading.Event()
    running: list[_Running] = []
    group_status: Status | None = None
    first: int | None = None
    with ExitStack() as stack:
        try:
            with sigterm_as_interrupt():
                for plan in plans:
                    running.append(_start(plan, run_env, cwd, stack, wake, plan.id == 0, echo_out, echo_err))
                if on_start is not None:
                    on_start([r.proc for r in running])
                group_status, first = _watch(running, wake, t0, timeout, heartbeat, reporter)
        except KeyboardInterrupt:
            group_status = Status.INTERRUPTED
            _stop(running, ProcessStatus.INTERRUPTED)
        except BaseException:
            _stop(running, ProcessStatus.ERROR)
            raise
        finally:
            for item in running:
                for tee in item.tees:
                    tee.join(timeout=10)
                for pipe in (item.proc.stdout, item.proc.stderr):
                    pipe.close()
    return _result(running, group_status, first, started, t0)


def _start(plan: ProcessPlan, run_env: dict[str, str], cwd: str, stack: ExitStack, wake: threading.Event,
           echo: bool, echo_out: BinaryIO | None, echo_err: BinaryIO | None) -> _Running:
    out_log = stack.enter_context(open(plan.stdout, "wb"))
    err_log = stack.enter_context(open(plan.stderr, "wb"))
    proc = subprocess.Popen(plan.argv, cwd=cwd, env=plan.child_env(run_env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    tees = [Tee(proc.stdout, out_log, echo_out if echo else None, wake),
            Tee(proc.stderr, err_log, echo_err if echo else None, wake)]
    waiter = _Waiter(proc, wake)
    for thread in (*tees, waiter):
        thread.start()
    return _Running(plan, proc, tees, waiter)


def _watch(running: list[_Running], wake: threading.Event, t0: float, timeout: float | None,
           heartbeat: float | None, reporter: Reporter | None) -> tuple[Status | None, int | None]:
    """Wait until every process ended or the run must stop; (the group's status if decided here, first failed)."""
    deadline = t0 + timeout if timeout is not None else None
    next_beat = t0 + heartbeat if heartbeat and reporter is not None else None
    first: int | None = None
    while True:
        now = time.monotonic()
        waits = [t - now for t in (deadline, next_beat) if t is not None]
        wake.wait(max(0.0, min(waits)) if waits else None)
        wake.clear()
        ended = sorted((r for r in running if r.status is None and r.waiter.ended is not None),
                       key=lambda r: r.waiter.ended)
        for item in ended:
            signal_tree(item.proc.pid, [], signal.SIGKILL)  # what it left in its group would hold our pipes
            item.status = ProcessStatus.OK if item.proc.returncode == 0 else ProcessStatus.FAILED
            if item.status == ProcessStatus.FAILED and first is None:
                first = item.plan.id
        if first is not None:
            _stop(running, ProcessStatus.STOPPED)
            return None, first
        if all(r.status is not None for r in running):
            return None, None
        if any(tee.error for r in running for tee in r.tees):
            _stop(running, ProcessStatus.ERROR)
            return Status.ERROR, None
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            _stop(running, ProcessStatus.TIMEOUT)
            return Status.TIMEOUT, None
        if next_beat is not None and now >= next_beat:
            left = sum(1 for r in running if r.status is None)
            reporter.heartbeat(f"running {now - t0:.0f} s; {left} of {len(running)} processes still running")
            next_beat = now + heartbeat


def _stop(running: list[_Running], status: ProcessStatus) -> None:
    """End every process still running (one grace period for all); they get `status`."""
    alive = [r for r in running if r.status is None]
    end_trees([r.proc for r in alive])
    for item in alive:
        item.status = status


def _result(running: list[_Running], group_status: Status | None, first: int | None, started: str,
            t0: float) -> GroupResult:
    from xlatools.bundle import utc_now

    processes = [ProcessResult(r.plan.id, r.status or ProcessStatus.ERROR, r.proc.returncode,
                               round((r.waiter.ended or time.monotonic()) - t0, 3), r.plan.id == first)
                 for r in running]
    if group_status is None:
        group_status = Status.FAILED if first is not None else Status.OK
    chosen = processes[first] if first is not None else (processes[0] if processes else None)
    error = None
    if group_status == Status.ERROR:
        failed = next((tee.error for r in running for tee in r.tees if tee.error), None)
        error = f"cannot write the program's log: {getattr(failed, 'strerror', None) or failed}"
    run = ProgramResult(group_status, chosen.returncode if chosen else None, round(time.monotonic() - t0, 3), started,
                        utc_now(), error)
    return GroupResult(run, processes, first)
