"""The Slurm executor's pure parts: settings (profile cluster: + command line), the job plan, Slurm's
answers read back (scontrol show job, sbatch refusals, slurmstepd's lines), a task's outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlatools.cluster.plan import TaskExit, plan_job
from xlatools.cluster.slurm import parse_show_job, refusal
from xlatools.cluster.spec import ClusterSpec, ExecutorChoice, from_profile_section, settle
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.cluster import SlurmJobRecord
from xlatools.run.slurm_launch import _status, _stepd_says
from xlatools.vocab import Status


def test_the_command_line_wins_over_the_profile_and_local_needs_no_spec():
    from xlatools.profiles.model import Cluster

    section = Cluster(
        executor="slurm", partition="gpu", time="30", sbatch_options=["--qos=debug"], setup=["module load cuda"]
    )
    executor, spec = from_profile_section(section, "profile p")
    assert executor == "slurm"
    merged = settle(ExecutorChoice(partition="h100", sbatch_options=("--exclusive",)), executor, spec)
    assert (merged.partition, merged.time, merged.sbatch_options) == ("h100", "30", ("--qos=debug", "--exclusive"))
    assert "command line" in merged.source
    assert settle(ExecutorChoice(executor="local"), executor, spec) is None


def test_slurm_settings_without_the_slurm_executor_are_refused():
    with pytest.raises(UsageError, match="go with --executor slurm"):
        settle(ExecutorChoice(partition="gpu"), "local", ClusterSpec())
    with pytest.raises(UsageError, match="one sbatch option"):  # a newline would start a shell line in the script
        settle(ExecutorChoice(executor="slurm", sbatch_options=("--qos=x\nrm -rf ~",)), "local", ClusterSpec())
    with pytest.raises(UsageError, match="without spaces"):
        settle(ExecutorChoice(executor="slurm", partition="gpu a"), "local", ClusterSpec())
    with pytest.raises(UsageError, match="not an executor"):
        settle(ExecutorChoice(executor="kubernetes"), "local", ClusterSpec())


def test_job_script_holds_the_settings_the_setup_and_one_srun_step():
    spec = ClusterSpec(partition="gpu", account="proj", time="10", gpus_per_task=1, setup=("module load cuda",))
    job = plan_job(spec, "step03-jax 0.4.29", "/shared/b/slurm", 2, "/venv/bin/python", "/work")
    lines = job.script.splitlines()
    assert lines[0] == "#!/bin/bash" and "#SBATCH --job-name=xlatools-step03-jax_0.4.29" in lines
    for option in ("--ntasks=2", "--partition=gpu", "--account=proj", "--time=10", "--gpus-per-task=1", "--no-requeue"):
        assert f"#SBATCH {option}" in lines
    assert lines.index("module load cuda") < len(lines) - 1 and lines[-1].startswith("exec srun ")
    assert job.srun[-2:] == ["/venv/bin/python", "/shared/b/slurm/task.py"]
    assert job.sbatch == ["sbatch", "--parsable", "/shared/b/slurm/job.sh"]
    spaced = plan_job(ClusterSpec(), "x", "/my dir/slurm", 1, "python", "/w").script
    assert '#SBATCH "--output=/my dir/slurm/job.out"' in spaced  # sbatch reads double quotes on #SBATCH lines


def test_scontrol_show_job_is_read_into_state_reason_and_nodes():
    line = (
        "JobId=14 JobName=xlatools-s UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) "
        "ExitCode=0:15 RunTime=00:00:07 Partition=debug NodeList=vm BatchHost=vm NumNodes=1"
    )
    info = parse_show_job(line, "14")
    assert (info.state, info.reason, info.exit_code, info.nodes, info.partition) == (
        "TIMEOUT",
        "TimeLimit",
        "0:15",
        ["vm"],
        "debug",
    )
    pending = parse_show_job("JobId=3 JobState=PENDING Reason=None NodeList=(null)", "3")
    assert pending.reason is None and pending.nodes == []


def test_sbatch_refusals_are_bad_input_or_a_missing_cluster():
    bad = refusal(
        "sbatch: error: invalid partition specified: nope\nsbatch: error: Batch job submission failed: "
        "Invalid partition name specified",
        "sbatch",
    )
    assert isinstance(bad, UsageError) and "Invalid partition name" in bad.message
    assert isinstance(
        refusal(
            "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
            "sbatch",
        ),
        UsageError,
    )
    down = refusal(
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", "sbatch"
    )
    assert isinstance(down, EnvironmentMissing)


def _exit(code=0, stopped=None, timed_out=False):
    return TaskExit(returncode=code, stopped_by_signal=stopped, timed_out=timed_out, started=1.0, finished=2.0)


def test_a_task_outcome_is_the_programs_unless_slurm_ended_the_job():
    record = SlurmJobRecord(job_id="7", state="COMPLETED")
    assert _status(record, [_exit(0), _exit(0)]) == Status.OK and record.killed_by_slurm is None
    assert _status(SlurmJobRecord(job_id="7", state="FAILED"), [_exit(0), _exit(3)]) == Status.FAILED
    assert _status(SlurmJobRecord(job_id="7", state="COMPLETED"), [_exit(124, timed_out=True)]) == Status.TIMEOUT
    lost = SlurmJobRecord(job_id="7", state="NODE_FAIL", reason="NodeDown")
    assert _status(lost, [None]) == Status.ERROR and "node failure" in lost.killed_by_slurm
    # The controller may still say FAILED when the tasks end; slurmstepd's line names the time limit.
    late = SlurmJobRecord(job_id="7", state="FAILED", reason="NonZeroExitCode")
    assert _status(late, [_exit(-15, stopped=15)], "DUE TO TIME LIMIT") == Status.TIMEOUT
    assert "time limit" in late.killed_by_slurm
    cancelled = SlurmJobRecord(job_id="7", state="CANCELLED", cancelled_by_xlatools=True)
    assert _status(cancelled, [None]) == Status.INTERRUPTED and cancelled.killed_by_slurm is None


def test_slurmstepd_cancel_lines_are_found(tmp_path: Path):
    out = tmp_path / "job.out"
    out.write_text(
        "srun: Job step aborted\nslurmstepd-vm: error: *** JOB 14 ON vm CANCELLED AT 2026-01-01T00:00:00 "
        "DUE TO TIME LIMIT ***\n"
    )
    assert _stepd_says(out) == "DUE TO TIME LIMIT"
    out.write_text("slurmstepd: error: *** JOB 15 ON vm CANCELLED AT 2026-01-01T00:00:00 ***\n")
    assert _stepd_says(out) == ""
    assert _stepd_says(tmp_path / "missing") is None


def test_a_profile_cluster_section_rejects_unknown_keys_and_bad_values():
    from pydantic import ValidationError

    from xlatools.profiles.model import Cluster

    with pytest.raises(ValidationError, match="partion"):
        Cluster(partion="gpu")
    with pytest.raises(ValidationError):
        Cluster(sbatch_options=["qos=debug"])  # one --option each
