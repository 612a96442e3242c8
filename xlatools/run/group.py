"""Run the processes of a multi-process run (`run --processes N`) as one program, through the one
runner (run/process.py): each process's output is logged to `pI.stdout.log` / `pI.stderr.log`
(process 0's is also echoed). The first process to fail (by time) stops the others, and so does one
that printed a fatal error and then sat silent and idle (a jax process whose backend cannot start
hangs at exit, its peers waiting for it): the run never waits for its timeout because a peer died.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Callable

from xlatools.run.child import Spec
from xlatools.run.multiprocess import ProcessPlan
from xlatools.run.process import FATAL_QUIET_S, ProgramResult, run_processes
from xlatools.vocab import ProcessStatus, Status

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.run.hang.capture import StuckWatch


@dataclass(frozen=True)
class ProcessResult:
    id: int
    status: ProcessStatus
    returncode: int | None  # negative: killed by that signal
    duration: float
    first_failure: bool = False
    last_lines: list[str] = field(default_factory=list)  # a failed process's last stderr lines
    hung: float | None = None  # seconds it sat silent and idle after a fatal error before it was stopped

    @property
    def signal_name(self) -> str | None:
        return ProgramResult(Status.OK, self.returncode, 0, "", "").signal_name

    def describe(self) -> str:
        if self.hung is not None:
            return f"printed a fatal error, then no output and no progress for {self.hung:.0f} s (stopped)"
        return ProgramResult(Status.FAILED, self.returncode, 0, "", "").describe()


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
        stopped = sum(1 for p in self.processes if p.status == ProcessStatus.STOPPED)
        failed = sum(1 for p in self.processes if p.status == ProcessStatus.FAILED) - 1
        tail = (f"; {failed} other{'s' if failed != 1 else ''} failed" if failed else "") + (
            f"; {stopped} other{'s' if stopped != 1 else ''} stopped" if stopped else ""
        )
        last = next((line.strip() for line in reversed(first.last_lines) if line.strip()), "")
        return f"process {first.id} failed first ({first.describe()}){tail}" + (
            f"; its last line: {last}" if last else ""
        )


def execute_group(
    plans: list[ProcessPlan],
    run_env: dict[str, str],
    cwd: str,
    timeout: float | None,
    echo_out: BinaryIO | None,
    echo_err: BinaryIO | None,
    on_start: Callable | None = None,
    heartbeat: float | None = None,
    reporter: Reporter | None = None,
    watch: StuckWatch | None = None,
) -> GroupResult:
    """Run every process of `plans` (bound) with `run_env` (the run's environment) plus its own part. What they
    leave running when the group ends (a daemon in a session of its own) is stopped: found by a marker."""
    from xlatools.proctree import leaving_nothing

    with leaving_nothing(run_env, on_start) as (env, started):
        specs = _specs(plans, env, echo_out, echo_err)
        group = run_processes(specs, cwd, timeout, started, heartbeat, reporter, fatal_quiet=FATAL_QUIET_S, watch=watch)
    first = plans[group.first].id if group.first is not None else None
    processes = [
        ProcessResult(
            plan.id, ended.status, ended.returncode, ended.duration, plan.id == first, ended.last_lines, ended.hung
        )
        for plan, ended in zip(plans, group.processes)
    ]
    chosen = processes[group.first] if group.first is not None else (processes[0] if processes else None)
    run = ProgramResult(
        group.status, chosen.returncode if chosen else None, group.duration, group.started, group.finished, group.error
    )
    return GroupResult(run, processes, first)


def _specs(plans: list[ProcessPlan], run_env: dict[str, str], echo_out, echo_err) -> list[Spec]:
    return [
        Spec(
            plan.argv,
            plan.child_env(run_env),
            Path(plan.stdout),
            Path(plan.stderr),
            echo_out if plan.id == 0 else None,
            echo_err if plan.id == 0 else None,
        )
        for plan in plans
    ]
