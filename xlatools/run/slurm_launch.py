"""A run's program as a Slurm job (`--executor slurm`): beside process.py/group.py, which run it here.

The plan is the same RunPlan; only the launch differs. Its processes become the tasks of one
`srun` step (cluster/plan.py), each with the logs, dumps and environment the local run would give
it; jax.distributed.initialize() finds its coordinator from Slurm's variables, so the local
127.0.0.1 coordinator variables are left out. The job's script and state go into the bundle's
slurm/ folder and the manifest's `slurm` record.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.cluster import slurm
from xlatools.cluster.plan import JOB_FOLDER, SCRIPT, SHIM, TASKS, JobPlan, TaskExit, TaskSpec, plan_job
from xlatools.cluster.spec import ClusterSpec
from xlatools.records.cluster import SlurmJobRecord
from xlatools.run.group import GroupResult, ProcessResult
from xlatools.run.process import ProgramResult
from xlatools.vocab import ProcessStatus, Status

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.run.plan import RunPlan

# The local run's coordinator (127.0.0.1, a port chosen here): on a cluster jax takes it from SLURM_*.
LOCAL_ONLY = ("JAX_COORDINATOR_ADDRESS", "JAX_COORDINATOR_BIND_ADDRESS")


def slurm_coordinator(plan: RunPlan, spec: ClusterSpec) -> tuple[RunPlan, str]:
    """The plan's processes without the local coordinator's variables (and JAX_LOCAL_DEVICE_IDS when Slurm binds
    GPUs per task), and what the manifest says of the coordinator."""
    from dataclasses import replace

    from xlatools.run.multiprocess import LOCAL_COORDINATOR, SLURM_COORDINATOR

    drop = _dropped(spec)
    processes = [replace(p, env={k: v for k, v in p.env.items() if k not in drop}) for p in plan.processes]
    notes = [note.replace(LOCAL_COORDINATOR, SLURM_COORDINATOR) for note in plan.notes]
    return replace(plan, processes=processes, notes=notes), "from Slurm's variables (jax.distributed.initialize)"


def _dropped(spec: ClusterSpec) -> tuple[str, ...]:
    return LOCAL_ONLY + (("JAX_LOCAL_DEVICE_IDS",) if spec.gpus_per_task else ())  # Slurm gives each task its GPUs


def _changes(env: dict[str, str], base: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """What the task sets on top of the job's environment (the caller's, which sbatch passes on)."""
    return {k: v for k, v in env.items() if base.get(k) != v}, sorted(k for k in base if k not in env)


def plan_tasks(
    plan: RunPlan, run_env: dict[str, str], caller_env: dict[str, str], spec: ClusterSpec, folder: str
) -> list[TaskSpec]:
    """One TaskSpec per process of the (bundle-bound) plan (pure but for finding pystack)."""
    tasks = _tasks(plan, run_env, caller_env, spec, folder)
    if plan.timeout is None and plan.stall is None:
        return tasks
    from dataclasses import replace

    from xlatools.run.hang.capture import FOLDER, pystack_argv
    from xlatools.run.hang.observer import OBSERVER

    bundle = Path(folder).parent
    logs = [log for task in tasks for log in (task.stdout, task.stderr)] + [str(bundle / OBSERVER)]
    return [
        replace(t, stall=plan.stall, stacks=str(bundle / FOLDER / f"p{i}"), pystack=pystack_argv(), progress=logs)
        for i, t in enumerate(tasks)
    ]


def _tasks(
    plan: RunPlan, run_env: dict[str, str], caller_env: dict[str, str], spec: ClusterSpec, folder: str
) -> list[TaskSpec]:
    if not plan.processes:
        env, unset = _changes(run_env, caller_env)
        return [
            TaskSpec(
                list(plan.argv),
                env,
                unset,
                str(Path(folder).parent / "stdout.log"),
                str(Path(folder).parent / "stderr.log"),
                f"{folder}/p0.exit",
                plan.timeout,
            )
        ]
    drop = _dropped(spec)
    tasks = []
    for process in plan.processes:
        env = {k: v for k, v in process.child_env(run_env).items() if k not in drop}
        env, unset = _changes(env, caller_env)
        tasks.append(
            TaskSpec(
                list(process.argv),
                env,
                sorted(set(unset) | set(drop)),
                process.stdout,
                process.stderr,
                f"{folder}/p{process.id}.exit",
                plan.timeout,
            )
        )
    return tasks


def prepare_job(
    plan: RunPlan, run_env: dict[str, str], caller_env: dict[str, str], spec: ClusterSpec, bundle: Path
) -> tuple[JobPlan, list[TaskSpec]]:
    """Write the job's folder (script, tasks, the task shim); the job plan."""
    folder = bundle / JOB_FOLDER
    folder.mkdir(exist_ok=True)
    tasks = plan_tasks(plan, run_env, caller_env, spec, str(folder))
    if tasks and tasks[0].stacks:
        Path(tasks[0].stacks).parent.mkdir(exist_ok=True)
    job = plan_job(spec, plan.name, str(folder), len(tasks), plan.python, plan.cwd)
    shutil.copy2(Path(__file__).parent.parent / "cluster" / SHIM, folder / SHIM)
    (folder / SCRIPT).write_text(job.script)
    (folder / SCRIPT).chmod(0o755)
    # the run's environment: its own eyes only
    fd = os.open(folder / TASKS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"tasks": [asdict(t) for t in tasks]}, handle)
    return job, tasks


def _exits(tasks: list[TaskSpec]) -> list[TaskExit | None]:
    """Each task's exit file (task.py writes it at its end); None: not (yet) written."""
    found: list[TaskExit | None] = []
    for task in tasks:
        try:
            found.append(TaskExit(**json.loads(Path(task.exit_file).read_text())))
        except (OSError, ValueError, TypeError):
            found.append(None)
    return found


def execute_job(
    plan: RunPlan,
    run_env: dict[str, str],
    caller_env: dict[str, str],
    spec: ClusterSpec,
    bundle: Path,
    on_start: Callable[[object], None],
    reporter: Reporter,
    on_submit: Callable[[SlurmJobRecord], None] | None = None,
) -> tuple[ProgramResult, GroupResult | None, SlurmJobRecord]:
    """Submit the job, wait for it (Ctrl-C/SIGTERM: scancel), and read every task's outcome."""
    from xlatools.bundle import utc_now

    job, tasks = prepare_job(plan, run_env, caller_env, spec, bundle)
    started, t0 = utc_now(), time.monotonic()
    submitted_at = time.time()
    job_id = slurm.submit(f"{job.folder}/{SCRIPT}")
    record = SlurmJobRecord(
        job_id=job_id, tasks=len(tasks), script=f"{JOB_FOLDER}/{SCRIPT}", submitted=utc_now(), partition=spec.partition
    )
    reporter.info(f"Slurm job {job_id} ({len(tasks)} task{'s' if len(tasks) != 1 else ''}; {spec.describe()})")
    on_start(None)
    if on_submit is not None:
        on_submit(record)
    ran_out = False
    try:  # --timeout ends the run wherever the job is (queued, stuck, listed in a state no one knows)
        waited = slurm.wait_bounded(job_id, lambda: all(e is not None for e in _exits(tasks)), plan.timeout, t0)
        info, ran_out = waited.info, waited.deadline_passed
        record.notes += [str(waited.note())] if waited.note() else []
    except BaseException as exc:  # Ctrl-C, SIGTERM: the job goes with us
        slurm.cancel([job_id])
        record.cancelled_by_xlatools, record.state = True, "CANCELLED"
        if not isinstance(exc, KeyboardInterrupt):
            _forget(job.folder)
            raise
        info = slurm.wait_gone(job_id)
    _forget(job.folder)
    exits = _exits(tasks)
    info, stepd = (info, None) if ran_out else _settled(info, exits, Path(job.folder) / "job.out")
    record.state, record.reason, record.exit_code, record.nodes = info.state, info.reason, info.exit_code, info.nodes
    record.partition = info.partition or record.partition
    firsts = [e.started for e in exits if e]
    record.started_s = round(min(firsts) - submitted_at, 3) if firsts else None
    record.cancelled_by_xlatools = slurm.was_cancelled(job_id)
    duration = round(time.monotonic() - t0, 3)
    status = Status.TIMEOUT if ran_out and not all(e is not None for e in exits) else _status(record, exits, stepd)
    codes = [e.returncode if e else None for e in exits]
    failed = [i for i, c in enumerate(codes) if c not in (0, None)]
    first = min(failed, key=lambda i: exits[i].finished or 0.0) if failed else None  # type: ignore[union-attr]
    chosen = codes[first] if first is not None else codes[0]
    result = ProgramResult(status, chosen, duration, started, utc_now())
    if not plan.processes:
        return result, None, record
    rows = [
        ProcessResult(i, _process_status(e, status), c, round(e.finished - e.started, 3) if e else duration, i == first)
        for i, (e, c) in enumerate(zip(exits, codes))
    ]
    return result, GroupResult(result, rows, first), record


def execute_in_session(
    plan: RunPlan,
    session,
    cluster: ClusterSpec,
    caller_env: dict[str, str],
    on_start: Callable[[object], None],
    reporter: Reporter,
    echo: tuple = (None, None),
) -> tuple[ProgramResult, GroupResult | None]:
    """execute_job for run.execute's bundle session: the job record in the manifest as soon as it is submitted;
    then the program's output (process 0's) to `echo`'s streams, as a local run shows it (after the job here)."""

    def on_submit(job: SlurmJobRecord) -> None:
        session.record.slurm = job
        session.save()

    result, group, session.record.slurm = execute_job(
        plan, plan.child_env(caller_env), caller_env, cluster, session.path, on_start, reporter, on_submit
    )
    if session.record.slurm.killed_by_slurm:
        session.record.notes.append(session.record.slurm.killed_by_slurm)
    session.record.notes += session.record.slurm.notes
    _read_task_stacks(plan, session, reporter)
    first = plan.processes[0] if plan.processes else None
    logs = (
        (Path(first.stdout), Path(first.stderr))
        if first
        else (session.path / "stdout.log", session.path / "stderr.log")
    )
    for log, stream in zip(logs, echo):
        _echo_tail(log, stream)
    return result, group


def _echo_tail(log: Path, stream, limit: int = 256 * 1024) -> None:
    """The end of a log (at most `limit` bytes) to a terminal stream; nothing when there is no stream."""
    if stream is None:
        return
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - limit))
            stream.write(handle.read())
            stream.flush()
    except (OSError, ValueError):
        pass  # the terminal or the log is gone: the bundle keeps the output


def _forget(folder: str) -> None:
    """tasks.json holds the run's environment (perhaps a token): it goes once the job has ended."""
    try:
        (Path(folder) / TASKS).unlink()
    except OSError:
        pass


def _settled(info: slurm.JobInfo, exits: list[TaskExit | None], job_out: Path) -> tuple[slurm.JobInfo, str | None]:
    """A task that Slurm stopped, seen a moment before the controller names why (its state can read FAILED
    before TIMEOUT, slurmstepd's line can land in job.out late): ask again for up to 5 s."""
    stepd = _stepd_says(job_out)
    deadline = time.monotonic() + 5
    while (
        any(e is None or e.stopped_by_signal for e in exits)
        and info.state not in slurm.KILLED_WHY
        and stepd is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.2)
        info, stepd = slurm.job_info(info.job_id), _stepd_says(job_out)
    return info, stepd


def _stepd_says(job_out: Path) -> str | None:
    """Why slurmstepd stopped the job, from its own line in the job's output
    (`*** JOB 14 ON node CANCELLED AT ... DUE TO TIME LIMIT ***`): it names the cause even when the
    controller's state still reads FAILED a moment after the tasks ended."""
    import re

    try:
        text = job_out.read_text(errors="replace")[-65536:]
    except OSError:
        return None
    found = re.findall(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+ ?(.*?) \*\*\*", text)
    return found[-1].strip() if found else None


def _status(record: SlurmJobRecord, exits: list[TaskExit | None], stepd: str | None = None) -> Status:
    if record.cancelled_by_xlatools:
        return Status.INTERRUPTED
    if any(e and e.timed_out for e in exits):
        return Status.TIMEOUT
    unfinished = any(e is None or e.stopped_by_signal for e in exits)
    if record.state in slurm.KILLED_WHY or unfinished:
        timed_out = record.state == "TIMEOUT" or (stepd or "").endswith("TIME LIMIT")
        why = (
            slurm.KILLED_WHY["TIMEOUT"]
            if timed_out
            else slurm.KILLED_WHY.get(record.state or "", f"the job ended in state {record.state or 'unknown'}")
        )
        said = f"; slurmstepd: {stepd.lower() or 'cancelled'}" if stepd is not None else ""
        record.killed_by_slurm = f"Slurm ended job {record.job_id} before the program finished: {why}" + (
            f" (state {record.state}, reason {record.reason}{said})"
        )
        return Status.TIMEOUT if timed_out else Status.ERROR
    return Status.OK if all(e is not None and e.returncode == 0 for e in exits) else Status.FAILED


def _process_status(exit_: TaskExit | None, run: Status) -> ProcessStatus:
    if exit_ is None or exit_.stopped_by_signal:
        return ProcessStatus.INTERRUPTED if run == Status.INTERRUPTED else ProcessStatus.STOPPED
    if exit_.timed_out:
        return ProcessStatus.TIMEOUT
    return ProcessStatus.OK if exit_.returncode == 0 else ProcessStatus.FAILED


def _read_task_stacks(plan: RunPlan, session, reporter: Reporter) -> None:
    """Tasks that task.py stopped at their timeout (or --stall) read their stacks first: the run's `stuck`."""
    from xlatools.run.hang.capture import FOLDER, from_task_files

    exits = _exits(
        [TaskSpec([], {}, [], "", "", f"{session.path / JOB_FOLDER}/p{i}.exit") for i in range(_count(plan))]
    )
    stuck = [(i, e) for i, e in enumerate(exits) if e is not None and e.timed_out and e.pid is not None]
    if not stuck:
        return
    stalled = any(e.stalled for _, e in stuck)
    trigger = "stall" if stalled else "timeout"
    reason = f"no progress for {plan.stall:g} s (--stall)" if stalled else f"timeout after {plan.timeout:g} s"
    many = len(exits) > 1
    found = from_task_files(
        session.path,
        [(i if many else None, e.pid, str(session.path / FOLDER / f"p{i}")) for i, e in stuck],  # type: ignore[misc]
        trigger,
        f"{reason} (read on the node by each task)",
    )
    session.record.stuck = found
    session.record.notes.append(f"{found.reason}: {found.summary} (stacks: {FOLDER}/summary.txt)")
    reporter.warn(f"stuck: {found.summary} ({FOLDER}/summary.txt)")


def _count(plan: RunPlan) -> int:
    return len(plan.processes) or 1
