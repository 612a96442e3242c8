"""A Slurm job as data (pure): the batch script and the sbatch and srun command lines.

Every job runs one `srun` step whose tasks each start task.py (copied into the job's folder, which
is on the shared file system like the bundle): the task reads its part of tasks.json (beside it) by
SLURM_PROCID, runs the program with its own logs, and writes its exit status beside them. The
scheduler's own files (the batch script's output) go to the job folder too.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from xlatools.cluster.spec import ClusterSpec

JOB_FOLDER = "slurm"  # in the bundle
SCRIPT = "job.sh"
TASKS = "tasks.json"
SHIM = "task.py"


@dataclass(frozen=True)
class JobPlan:
    name: str
    folder: str  # the job's files: job.sh, tasks.json, task.py, job.out, pI.exit
    tasks: int
    script: str  # the batch script's text
    sbatch: list[str]  # argv; the script's path last
    srun: list[str]  # argv of the job's one step (inside the script)

    def lines(self) -> list[str]:
        """What --dry-run shows."""
        return [
            f"sbatch: {shlex.join(self.sbatch)}",
            f"srun:   {shlex.join(self.srun)}",
            "job script:",
            *(f"  {line}" for line in self.script.splitlines()),
        ]


def _directive(option: str) -> str:
    """An option on a #SBATCH line: sbatch reads double quotes there, not a shell's single quotes."""
    return f'"{option}"' if any(c.isspace() for c in option) else option


def sbatch_options(spec: ClusterSpec, tasks: int) -> list[str]:
    """The #SBATCH settings of a job of `tasks` tasks."""
    options = [f"--ntasks={tasks}"]
    for flag, value in (
        ("--partition", spec.partition),
        ("--account", spec.account),
        ("--time", spec.time),
        ("--nodes", spec.nodes),
        ("--gpus-per-task", spec.gpus_per_task),
        ("--cpus-per-task", spec.cpus_per_task),
    ):
        if value is not None:
            options.append(f"{flag}={value}")
    return options + list(spec.sbatch_options)


def plan_job(spec: ClusterSpec, name: str, folder: str, tasks: int, python: str, cwd: str) -> JobPlan:
    """The job that runs `tasks` tasks of task.py (interpreter `python`, stdlib only) in `cwd`."""
    job_name = "xlatools-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]
    srun = ["srun", "--kill-on-bad-exit=0", f"--ntasks={tasks}", python, f"{folder}/{SHIM}"]
    # --no-requeue: a job its node lost ends (NODE_FAIL, a skip xlatools records) instead of queueing again unseen.
    header = [
        f"--job-name={job_name}",
        f"--output={folder}/job.out",
        f"--chdir={cwd}",
        "--no-requeue",
        *sbatch_options(spec, tasks),
    ]
    script = [
        "#!/bin/bash",
        *(f"#SBATCH {_directive(option)}" for option in header),
        "# made by xlatools; the tasks' own logs are in the bundle",
        "set -e",
    ]
    script += list(spec.setup)
    script.append("exec " + shlex.join(srun))
    sbatch = ["sbatch", "--parsable", f"{folder}/{SCRIPT}"]
    return JobPlan(name=job_name, folder=folder, tasks=tasks, script="\n".join(script) + "\n", sbatch=sbatch, srun=srun)


@dataclass(frozen=True)
class TaskSpec:
    """One task of the job: what task.py runs (environment changes only: the job inherits the rest)."""

    argv: list[str]
    env: dict[str, str]
    unset: list[str]
    stdout: str
    stderr: str
    exit_file: str
    timeout: float | None = None
    # A stuck task (run/hang/): before task.py stops it at its timeout, or when no log of any task grew for
    # `stall` seconds, it reads its program's stacks with `pystack` into `stacks`.locals.txt / .native.txt.
    stall: float | None = None
    stacks: str | None = None
    pystack: list[str] | None = None
    progress: list[str] = field(default_factory=list)  # every task's logs and the observer's folder


@dataclass(frozen=True)
class TaskExit:
    """A task's exit file, as task.py writes it (JSON)."""

    returncode: int | None
    timed_out: bool = False
    stopped_by_signal: int | None = None  # Slurm stopped the task (SIGTERM at a time limit, scancel, node going down)
    started: float = 0.0  # time.time() on the node
    finished: float = 0.0
    node: str = ""
    stalled: bool = False  # stopped because nothing moved for --stall seconds (timed_out is true too)
    pid: int | None = None  # the program's pid on the node (its stacks' files name it)
