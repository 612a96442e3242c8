"""The Slurm commands xlatools drives (sbatch, squeue, scontrol, scancel, sinfo): the execute side.

Job states come from `squeue` while a job is known to the controller and `scontrol show job` after
it ends (slurmctld keeps ended jobs for MinJobAge, 300 s by default): no accounting database
(slurmdbd, sacct) is needed. Every job submitted here is remembered until it ends, so Ctrl-C or
SIGTERM cancels all of them (cancel_all), from any thread.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from typing import Callable
from dataclasses import dataclass

from xlatools.errors import EnvironmentMissing, UsageError

COMMAND_TIMEOUT = 60.0  # of one Slurm command (XLATOOLS_SLURM_COMMAND_TIMEOUT_S overrides)
# sbatch's refusals that are the user's input (partition, account, QOS, limits), not the cluster's state.
_BAD_INPUT = (
    "invalid partition",
    "invalid account",
    "invalid qos",
    "invalid time limit",
    "requested time limit",
    "requested node configuration is not available",
    "invalid generic resource",
    "unrecognized option",
    "invalid option",
    "invalid argument",
    "access/permission denied",
    "user's group not permitted",
    "more processors requested than permitted",
    "node count specification invalid",
    "invalid --",
)
# States in which the job has ended; the others (PENDING, RUNNING, COMPLETING, ...) have not.
ENDED = {
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "CANCELLED",
    "NODE_FAIL",
    "PREEMPTED",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "SPECIAL_EXIT",
    "REVOKED",
}
# States of a job that has not ended (squeue's long names); any other state is one xlatools does not know.
WAITING = {
    "PENDING",
    "CONFIGURING",
    "RUNNING",
    "COMPLETING",
    "SUSPENDED",
    "STOPPED",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESIZING",
    "SIGNALING",
    "STAGE_OUT",
    "RESV_DEL_HOLD",
    "POWER_UP_NODE",
    "UPDATE_DB",
}
# Seconds a job whose tasks have all ended may stay listed in a known state before the wait ends: a job Slurm
# ends at its time limit stays COMPLETING for up to KillWait (30 s by default) and reads FAILED before TIMEOUT.
LINGER = 60.0
# Past --timeout, the time a task takes to stop its program (SIGTERM, 5 s, SIGKILL) and write its exit file.
TIMEOUT_GRACE = 10.0
KILLED_WHY = {
    "TIMEOUT": "Slurm's time limit",
    "NODE_FAIL": "node failure",
    "PREEMPTED": "preempted",
    "CANCELLED": "cancelled",
    "OUT_OF_MEMORY": "out of memory (Slurm)",
    "BOOT_FAIL": "node boot failure",
    "DEADLINE": "deadline passed",
    "REVOKED": "revoked",
}

_LOCK = threading.Lock()
_ACTIVE: set[str] = set()  # jobs submitted and not yet seen ended
_CANCELLED: set[str] = set()  # jobs cancel_all stopped


def require() -> None:
    """No Slurm client on this machine: exit 3 with the fix."""
    missing = [tool for tool in ("sbatch", "squeue", "scontrol", "scancel") if shutil.which(tool) is None]
    if missing:
        raise EnvironmentMissing(
            f"--executor slurm: no Slurm client here ({', '.join(missing)} not found on PATH)",
            hint="run xlatools on a login node of the cluster (or install slurm-client and set "
            "SLURM_CONF), or use --executor local",
        )


def command_timeout() -> float:
    """Seconds a Slurm command may take: COMMAND_TIMEOUT, or XLATOOLS_SLURM_COMMAND_TIMEOUT_S when it is a
    number of seconds more than 0."""
    import math
    import os

    try:
        value = float(os.environ.get("XLATOOLS_SLURM_COMMAND_TIMEOUT_S", ""))
    except ValueError:
        return COMMAND_TIMEOUT
    return value if math.isfinite(value) and 0 < value <= COMMAND_TIMEOUT * 60 else COMMAND_TIMEOUT


def _call(argv: list[str], timeout: float | None = None) -> subprocess.CompletedProcess:
    """One Slurm command, its output as text (bytes that are not UTF-8 replaced: a site's wrapper may print
    anything); past `timeout` it is stopped with everything it started (its own session), never only itself."""
    from xlatools.proctree import run_captured

    timeout = command_timeout() if timeout is None else min(timeout, command_timeout())
    try:
        return run_captured(argv, timeout=timeout, sweep=False)
    except OSError as exc:  # not found, not executable, a folder, ...
        if isinstance(exc, FileNotFoundError):
            require()  # the usual message when one of the four is missing
        raise EnvironmentMissing(
            f"cannot run `{argv[0]}`: {exc.strerror or exc}", hint="check the Slurm client on PATH"
        ) from None
    except subprocess.TimeoutExpired:
        raise EnvironmentMissing(
            f"`{' '.join(argv[:2])}` did not answer in {timeout:.0f} s: the Slurm controller is not responding",
            hint="check `sinfo`; try again when the cluster answers",
        ) from None


def refusal(stderr: str, what: str) -> Exception:
    """The error for a Slurm command that refused: bad input (exit 2) when Slurm says the options are wrong,
    else the cluster cannot be used (exit 3); Slurm's own message either way."""
    message = " ".join(line.strip() for line in stderr.strip().splitlines()[-3:]) or "no message"
    lowered = message.lower()
    if any(marker in lowered for marker in _BAD_INPUT):
        return UsageError(
            f"{what}: Slurm refused the job: {message}",
            hint="check --partition/--account/--time-limit or the profile's "
            "cluster: section (`sinfo -s` lists partitions)",
        )
    return EnvironmentMissing(
        f"{what}: Slurm could not take the job: {message}",
        hint="check that the cluster answers (`sinfo`) and SLURM_CONF",
    )


def submit(script_path: str) -> str:
    """sbatch the script; the job id."""
    require()
    done = _call(["sbatch", "--parsable", script_path])
    if done.returncode != 0:
        raise refusal(done.stderr, "sbatch")
    job_id = done.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        said = done.stdout.strip()
        raise EnvironmentMissing(
            f"sbatch answered {said[:200]!r}{' ...' if len(said) > 200 else ''}, not a job id",
            hint="check that `sbatch --parsable` on PATH is Slurm's (a wrapper may print more than the job id)",
        )
    with _LOCK:
        _ACTIVE.add(job_id)
    return job_id


def queue_state(job_id: str) -> str | None:
    """The job's state while the controller lists it in the queue; None once it has left the queue."""
    done = _call(["squeue", "-h", "-j", job_id, "-o", "%T"])
    state = done.stdout.strip()
    if done.returncode != 0 or not state:
        return None
    return state


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str | None
    reason: str | None
    exit_code: str | None
    nodes: list[str]
    partition: str | None


def parse_show_job(text: str, job_id: str) -> JobInfo:
    """`scontrol show job -o ID`'s line (Key=Value pairs) as a JobInfo."""
    fields: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if sep and key not in fields:
            fields[key] = value
    state = fields.get("JobState")
    reason = fields.get("Reason")
    nodelist = fields.get("NodeList")
    return JobInfo(
        job_id,
        state,
        None if reason in (None, "None") else reason,
        fields.get("ExitCode"),
        expand_nodes(nodelist) if nodelist and nodelist != "(null)" else [],
        fields.get("Partition"),
    )


def expand_nodes(nodelist: str) -> list[str]:
    """Slurm's host list (`gpu[01-02],cpu7`) as names; with scontrol when it has brackets."""
    if "[" not in nodelist:
        return nodelist.split(",")
    done = _call(["scontrol", "show", "hostnames", nodelist])
    return done.stdout.split() if done.returncode == 0 else [nodelist]


def job_info(job_id: str) -> JobInfo:
    done = _call(["scontrol", "show", "job", "-o", job_id])
    if done.returncode != 0:  # forgotten already (MinJobAge): the state is unknown
        return JobInfo(job_id, None, None, None, [], None)
    return parse_show_job(done.stdout, job_id)


@dataclass(frozen=True)
class Waited:
    """How a wait for a job ended: its final state (`info`); `listed_as`: the state Slurm still listed it in
    when xlatools stopped waiting (its tasks had all ended, or the deadline passed); `deadline_passed`."""

    info: JobInfo
    listed_as: str | None = None
    deadline_passed: bool = False
    timeout: float | None = None  # the run's --timeout, when it ended the wait

    def note(self) -> str | None:
        """What the manifest says of a job that was still listed when the wait ended."""
        if self.deadline_passed:
            return (
                f"--timeout {self.timeout:g} s ran out while Slurm listed job {self.info.job_id} as "
                f"{self.listed_as or 'gone'}: xlatools cancelled it"
            )
        if self.listed_as is None:
            return None
        if self.listed_as not in WAITING:
            return (
                f"every task had ended; Slurm listed job {self.info.job_id} as {self.listed_as!r}, a state "
                "xlatools does not know: not waited for"
            )
        return (
            f"every task had ended but Slurm still listed job {self.info.job_id} as {self.listed_as} "
            f"after {LINGER:.0f} s: xlatools stopped waiting for it"
        )


def wait(job_id: str, finished: Callable[[], bool], poll: float = 1.0, deadline: float | None = None) -> Waited:
    """Until the job has left the queue: `finished()` (its tasks' exit files all written) is checked every
    50 ms, squeue every `poll` seconds, and more often once the tasks are done. Once they are, the job has
    LINGER seconds to leave the queue (none when it is listed in a state xlatools does not know); `deadline`
    (time.monotonic()) ends the wait whatever the job's state (the caller cancels it). Then its final state."""
    next_query, done_at, state = 0.0, None, None
    while True:
        now = time.monotonic()
        if done_at is None and finished():
            done_at = next_query = now
        if now >= next_query:
            state = queue_state(job_id)
            if state is None or state in ENDED:
                state = None
                break
            next_query = now + (poll if done_at is None else (0.1 if now - done_at < 2 else 0.5))
        if done_at is not None and (state not in WAITING or now - done_at >= LINGER):
            break  # the tasks have ended: a state xlatools does not know is not waited for at all
        if deadline is not None and now >= deadline:
            return Waited(JobInfo(job_id, state, None, None, [], None), state, deadline_passed=True)
        time.sleep(0.05)
    info = job_info(job_id)
    with _LOCK:
        _ACTIVE.discard(job_id)
    return Waited(info, state)


def wait_bounded(job_id: str, finished: Callable[[], bool], timeout: float | None, since: float) -> Waited:
    """wait() under a run's --timeout: each task stops its program at the timeout itself; TIMEOUT_GRACE past it
    (from `since`, time.monotonic() at submission) the job is cancelled wherever it is (queued, stuck, listed in
    any state)."""
    deadline = since + timeout + TIMEOUT_GRACE if timeout else None
    waited = wait(job_id, finished, deadline=deadline)
    if not waited.deadline_passed:
        return waited
    cancel([job_id])
    return Waited(wait_gone(job_id, limit=5), waited.listed_as, True, timeout)


def wait_gone(job_id: str, limit: float = 30.0) -> JobInfo:
    """After scancel: until the job has left the queue (at most `limit` seconds); its final state."""
    end = time.monotonic() + limit
    while time.monotonic() < end and queue_state(job_id) not in (None, *ENDED):
        time.sleep(0.1)
    info = job_info(job_id)
    with _LOCK:
        _ACTIVE.discard(job_id)
    return info


def was_cancelled(job_id: str) -> bool:
    with _LOCK:
        return job_id in _CANCELLED


def cancel(job_ids: list[str]) -> None:
    if not job_ids:
        return
    with _LOCK:
        _CANCELLED.update(job_ids)
    try:
        _call(["scancel", *job_ids], timeout=30)
    except EnvironmentMissing:
        pass  # best effort: the controller does not answer; the jobs' time limits end them


def cancel_all() -> list[str]:
    """scancel every job submitted here that has not been seen ended (Ctrl-C, SIGTERM); their ids."""
    with _LOCK:
        ids = sorted(_ACTIVE - _CANCELLED)
    cancel(ids)
    return ids


def partition_exists(partition: str | None) -> tuple[bool, str]:
    """(found, sinfo's summary or message): the partition (or the default one when None)."""
    argv = ["sinfo", "-h", "-o", "%P %a %D %T"] + (["-p", partition] if partition else [])
    done = _call(argv)
    if done.returncode != 0:
        return False, done.stderr.strip()
    return bool(done.stdout.strip()), done.stdout.strip()


def preflight(spec, tasks: int) -> str:
    """`sbatch --test-only` with the job's settings: Slurm checks partition, account, time and size without
    submitting anything. Refused: bad input (exit 2) or no cluster (exit 3), with Slurm's message.
    Returns Slurm's estimate (when and where such a job would start)."""
    from xlatools.cluster.plan import sbatch_options

    require()
    done = _call(["sbatch", "--test-only", *sbatch_options(spec, tasks), "--wrap=true"])
    if done.returncode != 0:
        raise refusal(done.stderr, f"--executor slurm ({spec.describe()})")
    return (done.stderr or done.stdout).strip().removeprefix("sbatch: ")
