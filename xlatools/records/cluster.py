"""What a run or a bisection step that ran as a Slurm job records about that job (manifest `slurm`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(kw_only=True)
class SlurmJobRecord:
    job_id: str
    state: str | None = None  # Slurm's JobState: COMPLETED, FAILED, TIMEOUT, CANCELLED, NODE_FAIL, PREEMPTED, ...
    reason: str | None = None  # Slurm's Reason, when it gives one
    exit_code: str | None = None  # Slurm's ExitCode "status:signal" of the batch script
    nodes: list[str] = field(default_factory=list)
    partition: str | None = None
    tasks: int = 1
    script: str = "slurm/job.sh"  # in the bundle
    submitted: str | None = None  # UTC, when sbatch answered
    started_s: float | None = None  # seconds from sbatch to the first task starting (Slurm's overhead)
    cancelled_by_xlatools: bool = False  # Ctrl-C / SIGTERM: xlatools ran scancel on it
    killed_by_slurm: str | None = (
        None  # the job ended without its program finishing: why (time limit, node failure, ...)
    )
    notes: list[str] = field(default_factory=list)  # how the wait for the job ended, when not as usual
