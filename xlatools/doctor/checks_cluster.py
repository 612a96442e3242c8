"""`doctor --executor slurm`: the Slurm client is here, the controller answers, the partition (and account,
time) are accepted, and a 1-second job runs (how long it queued)."""

from __future__ import annotations

import shutil
import subprocess
import time

from xlatools.cluster.spec import ClusterSpec
from xlatools.doctor.model import Check, fail, ok, warn

QUEUE_LIMIT_S = 120  # srun --immediate: a job that cannot start in this long is a warning, not a wait


def cluster_checks(spec: ClusterSpec) -> list[Check]:
    from xlatools.cluster import slurm
    from xlatools.errors import XlaToolsError

    missing = [
        tool for tool in ("sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo") if shutil.which(tool) is None
    ]
    if missing:
        return [
            fail(
                "slurm client",
                f"{', '.join(missing)} not found on PATH",
                "run on a login node of the cluster, or install slurm-client and set SLURM_CONF",
            )
        ]
    checks = [ok("slurm client", f"sbatch at {shutil.which('sbatch')}")]
    try:
        found, summary = slurm.partition_exists(None)
    except XlaToolsError as exc:
        return checks + [fail("slurm controller", exc.message, "check that slurmctld runs and SLURM_CONF names it")]
    if not found:
        return checks + [
            fail(
                "slurm controller",
                summary or "sinfo listed nothing",
                "check that slurmctld runs and SLURM_CONF names it",
            )
        ]
    checks.append(ok("slurm controller", f"answers; partitions: {'; '.join(summary.splitlines()[:4])}"))
    try:
        estimate = slurm.preflight(spec, 1)
    except XlaToolsError as exc:
        return checks + [fail("slurm job settings", exc.message, exc.hint or "fix the cluster: section or options")]
    checks.append(ok("slurm job settings", f"{spec.describe()}: {estimate}"))
    return checks + [_one_second_job(spec)]


def _one_second_job(spec: ClusterSpec) -> Check:
    from xlatools.cluster.plan import sbatch_options

    options = [o for o in sbatch_options(spec, 1) if not o.startswith("--ntasks")]
    argv = [
        "srun",
        f"--immediate={QUEUE_LIMIT_S}",
        "--job-name=xlatools-doctor",
        "--ntasks=1",
        *options,
        "sh",
        "-c",
        "date +%s.%N; sleep 1",
    ]
    from xlatools.proctree import run_captured

    t0 = time.time()
    try:  # srun and what it started are stopped together on the timeout; bytes that are not UTF-8 replaced
        done = run_captured(argv, timeout=QUEUE_LIMIT_S + 60, sweep=False)
    except subprocess.TimeoutExpired:
        return warn("slurm 1-second job", f"no answer in {QUEUE_LIMIT_S + 60} s", "check `squeue -u $USER`")
    except OSError as exc:
        return fail("slurm 1-second job", f"cannot run srun: {exc.strerror or exc}", "check the Slurm client on PATH")
    total = time.time() - t0
    try:
        queued = float(done.stdout.split()[0]) - t0
    except (IndexError, ValueError):
        message = " ".join(done.stderr.strip().splitlines()[-2:]) or f"srun exit {done.returncode}"
        return warn(
            "slurm 1-second job",
            f"did not run: {message}",
            f"the partition may be busy (it waited up to {QUEUE_LIMIT_S} s); try again or pick another",
        )
    if done.returncode != 0:
        return warn(
            "slurm 1-second job", f"started after {queued:.2f} s but exited {done.returncode}", "see `srun` output"
        )
    return ok("slurm 1-second job", f"queued {queued:.2f} s, done in {total:.2f} s")
