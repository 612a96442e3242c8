"""`--executor slurm` against a real one-node Slurm cluster (conftest.slurm), through the CLI.

Cost: about 1-1.5 min with the bisect environments cached (XLATOOLS_TEST_BISECT_CACHE): a 2-process
run, a K=2 bisection, a step whose job hits its time limit (Slurm checks limits every 30 s: up to 30 s),
Ctrl-C and SIGTERM, a node set DOWN mid-bisection, doctor, a triage of releases and dumps (about 2 min
for all here, on 2 shared cores)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import bundles, manifest, run_cli, sigint_default
from tests.integration.bisect.test_bisect_releases import BAD, CHECK, GOOD, states, write

# A slow middle: jax 0.4.29 and 0.4.30 take long enough for a test to act on their jobs.
SLOW_CHECK = (
    "import time, jax, jax.lax\nif jax.__version__ in ('0.4.29', '0.4.30'):\n    time.sleep(float(__import__('os')"
    ".environ.get('SLOW_S', '600')))\njax.lax.xeinsum  # removed in jax 0.4.31\n"
)


def _env(slurm: dict[str, str], cache: Path | None = None) -> dict[str, str]:
    return {**slurm, "JAX_PLATFORMS": "cpu", **({"XLATOOLS_CACHE_DIR": str(cache)} if cache else {})}


def _squeue(slurm: dict[str, str], *more: str) -> list[str]:
    """`JOBID NAME STATE` of every job the test cluster still lists (with `-s`: its steps)."""
    form = "%i %j" if "-s" in more else "%i %j %T"
    done = subprocess.run(
        ["squeue", "-h", "-o", form, *more], capture_output=True, text=True, env={**os.environ, **slurm}, timeout=30
    )
    return done.stdout.splitlines()


def _scontrol(slurm: dict[str, str], *args: str) -> None:
    subprocess.run(["scontrol", *args], check=True, env={**os.environ, **slurm}, timeout=30)


def _wait_for(what, condition, limit: float = 300):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"waited {limit:.0f} s for {what}")


def _start_bisect(tmp_path: Path, env: dict[str, str], *more: str) -> subprocess.Popen:
    """The bisection in the background; its output in tmp_path/bisect.log (a pipe nobody reads would fill)."""
    with open(tmp_path / "bisect.log", "ab") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "xlatools",
                "bisect",
                "releases",
                "--good",
                GOOD,
                "--bad",
                BAD,
                "--executor",
                "slurm",
                *more,
                "--",
                "slow_check.py",
            ],
            cwd=tmp_path,
            env={**os.environ, "NO_COLOR": "1", **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=sigint_default,
        )


def _log(tmp_path: Path) -> str:
    return (tmp_path / "bisect.log").read_text(errors="replace")[-3000:]


def test_two_process_run_is_one_slurm_job_with_every_process_in_the_bundle(slurm, tmp_path):
    profile = write(
        tmp_path / "cluster.yaml", 'cluster:\n  executor: slurm\n  time: "5"\n  setup: ["echo node-setup"]\n'
    )
    done = run_cli(
        "run",
        "smoke:multiprocess",
        "--profile",
        str(profile),
        "--json",
        "--out",
        str(tmp_path),
        env=_env(slurm),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    job = data["slurm"]
    assert job["state"] == "COMPLETED" and job["exit_code"] == "0:0" and job["tasks"] == 2 and job["nodes"]
    assert [p["status"] for p in data["processes"]] == ["ok", "ok"]
    assert data["smoke"]["results"][0]["ok"] and data["smoke"]["results"][0]["name"] == "multiprocess"
    bundle = Path(data["bundle"])
    assert "process 1 of 2" in (bundle / "p1.stdout.log").read_text()  # jax.distributed from Slurm's variables
    script = (bundle / "slurm" / "job.sh").read_text()
    assert script.count("srun") == 1 and "#SBATCH --time=5" in script
    assert "node-setup" in (bundle / "slurm" / "job.out").read_text()  # the profile's setup lines ran on the node
    assert not (bundle / "slurm" / "tasks.json").exists()  # the run's environment does not stay behind
    assert "JAX_COORDINATOR_ADDRESS" not in data["processes"][0]["env"]


def test_bad_partition_is_bad_input_with_slurms_message_and_no_bundle(slurm, tmp_path):
    done = run_cli(
        "run",
        "smoke:multiprocess",
        "--executor",
        "slurm",
        "--partition",
        "nosuch",
        "--out",
        str(tmp_path / "out"),
        env=_env(slurm),
    )
    assert done.returncode == 2, done.stderr
    assert "invalid partition" in done.stderr.lower() and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_no_slurm_on_the_machine_is_exit_3(tmp_path):
    done = run_cli(
        "run",
        "smoke:multiprocess",
        "--executor",
        "slurm",
        "--out",
        str(tmp_path),
        env={"PATH": os.path.dirname(sys.executable)},
    )
    assert done.returncode == 3, done.stderr
    assert "no Slurm client here" in done.stderr and "hint" in done.stderr.lower()


def test_dry_run_shows_the_job_script_and_commands(tmp_path):
    done = run_cli("run", "smoke:multiprocess", "--executor", "slurm", "--time-limit", "5", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert (
        "sbatch --parsable" in done.stdout
        and "srun --kill-on-bad-exit=0 --ntasks=2" in done.stdout
        and "task.py" in done.stdout
    )
    assert "#SBATCH --time=5" in done.stdout
    # the processes as the job runs them: jax's coordinator comes from Slurm, not from a local port
    assert "coordinator from Slurm's variables" in done.stdout
    assert "127.0.0.1" not in done.stdout and "JAX_COORDINATOR_ADDRESS" not in done.stdout


def test_slurm_bisection_with_two_jobs_finds_the_same_first_bad(slurm, bisect_cache, tmp_path):
    write(tmp_path / "check.py", CHECK)
    done = run_cli(
        "bisect",
        "releases",
        "--good",
        GOOD,
        "--bad",
        BAD,
        "--executor",
        "slurm",
        "--jobs",
        "2",
        "--json",
        "--",
        "check.py",
        cwd=tmp_path,
        env=_env(slurm, bisect_cache),
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["result"]["first_bad"]["key"] == "0.4.31" and data["result"]["last_good"]["key"] == "0.4.30"
    for step in data["steps"]:
        job = manifest(Path(step["bundle"]))["slurm"]
        assert job["state"] in ("COMPLETED", "FAILED") and job["started_s"] is not None


def test_a_step_slurm_kills_at_its_time_limit_is_skip(slurm, bisect_cache, tmp_path):
    write(tmp_path / "slow_check.py", SLOW_CHECK.replace("'0.4.30'", "'none'"))
    proc = _start_bisect(tmp_path, _env(slurm, bisect_cache), "--time-limit", "5")
    job = _wait_for("the 0.4.29 step's job", lambda: [j for j in _squeue(slurm) if "0.4.29" in j and "RUNNING" in j])
    job_id = job[0].split()[0]
    _wait_for("its srun step", lambda: _squeue(slurm, "-s", "-j", job_id))  # the program runs: not killed before it
    # Slurm enforces limits in minutes, checked every 30 s: end the job's time now instead of waiting 5 min.
    _scontrol(slurm, "update", f"JobId={job_id}", f"EndTime={time.strftime('%Y-%m-%dT%H:%M:%S')}")
    proc.wait(timeout=300)
    assert proc.returncode == 0, _log(tmp_path)
    state = json.loads(states(tmp_path)[0].read_text())
    skipped = [s for s in state["steps"] if s["key"] == "0.4.29"]
    assert skipped[0]["outcome"] == "skip" and "time limit" in skipped[0]["reason"], skipped
    assert state["result"]["first_bad"]["key"] == "0.4.31"
    assert manifest(Path(skipped[0]["bundle"]))["slurm"]["state"] == "TIMEOUT"


def test_ctrl_c_cancels_every_job(slurm, bisect_cache, tmp_path):
    write(tmp_path / "slow_check.py", SLOW_CHECK.replace("('0.4.29', '0.4.30')", "('0.4.28', '0.4.31')"))
    proc = _start_bisect(tmp_path, _env(slurm, bisect_cache), "--jobs", "2")
    _wait_for("both end steps running", lambda: len([j for j in _squeue(slurm) if "RUNNING" in j]) >= 2)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    assert proc.returncode == 130, _log(tmp_path)
    assert _squeue(slurm) == []
    steps = bundles(states(tmp_path)[0].parent / "steps")
    assert steps and all(manifest(b)["slurm"]["cancelled_by_xlatools"] for b in steps)


def test_a_node_set_down_mid_bisection_loses_no_finished_step(slurm, bisect_cache, tmp_path):
    write(tmp_path / "slow_check.py", SLOW_CHECK)
    env = _env(slurm, bisect_cache)
    proc = _start_bisect(tmp_path, env)
    _wait_for(
        "a middle step running",
        lambda: [j for j in _squeue(slurm) if "RUNNING" in j and ("0.4.29" in j or "0.4.30" in j)],
    )
    before = json.loads(states(tmp_path)[0].read_text())["steps"]
    node = subprocess.run(
        ["sinfo", "-h", "-o", "%n"], capture_output=True, text=True, env={**os.environ, **slurm}
    ).stdout.split()[0]
    # The node's jobs end NODE_FAIL; it comes back as soon as its slurmd answers (ReturnToService=2).
    _scontrol(slurm, "update", f"NodeName={node}", "State=DOWN", "Reason=xlatools-test")
    _wait_for(
        f"the lost step recorded: {_log(tmp_path)}",
        lambda: len(json.loads(states(tmp_path)[0].read_text())["steps"]) > len(before),
        120,
    )
    proc.send_signal(signal.SIGINT)  # the next step is running (slowly): stop, and continue later
    proc.wait(timeout=120)
    assert proc.returncode == 130, _log(tmp_path)
    lost = json.loads(states(tmp_path)[0].read_text())["steps"]
    assert lost[: len(before)] == before
    assert lost[len(before)]["outcome"] == "skip" and "node" in lost[len(before)]["reason"], lost[len(before)]
    _wait_for(
        "the node back",
        lambda: (
            "idle"
            in subprocess.run(
                ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env={**os.environ, **slurm}
            ).stdout
        ),
        60,
    )
    again = run_cli(
        "bisect",
        "releases",
        "--good",
        GOOD,
        "--bad",
        BAD,
        "--executor",
        "slurm",
        "--json",
        "--",
        "slow_check.py",
        cwd=tmp_path,
        env={**env, "SLOW_S": "0"},
        timeout=600,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    data = json.loads(again.stdout)
    assert data["status"] == "done" and data["steps"][: len(lost)] == lost
    assert data["result"]["first_bad"]["key"] == "0.4.31"


def test_doctor_checks_the_cluster_and_runs_a_one_second_job(slurm):
    done = run_cli("doctor", "--executor", "slurm", "--json", env=_env(slurm), timeout=300)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"] if c["name"].startswith("slurm")}
    assert [c["status"] for c in checks.values()] == ["ok"] * 4, checks
    assert "queued" in checks["slurm 1-second job"]["evidence"]
    wrong = run_cli("doctor", "--executor", "slurm", "--partition", "nosuch", "--json", env=_env(slurm), timeout=300)
    found = {c["name"]: c for c in json.loads(wrong.stdout)["checks"]}
    assert wrong.returncode == 1 and found["slurm job settings"]["status"] == "fail"
    assert "invalid partition" in found["slurm job settings"]["evidence"].lower()


def test_sigterm_cancels_a_runs_job_and_the_bundle_says_so(slurm, tmp_path):
    write(tmp_path / "slow.py", "import time\ntime.sleep(600)\n")
    with open(tmp_path / "run.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "xlatools", "run", "slow.py", "--executor", "slurm", "--out", str(tmp_path / "out")],
            cwd=tmp_path,
            env={**os.environ, **_env(slurm)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    _wait_for("the run's job", lambda: [j for j in _squeue(slurm) if "RUNNING" in j])
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    assert proc.returncode == 130, (tmp_path / "run.log").read_text()[-2000:]
    assert _squeue(slurm) == []
    record = manifest(bundles(tmp_path / "out")[0])
    assert record["status"] == "interrupted" and record["slurm"]["cancelled_by_xlatools"]


def test_triage_runs_its_release_bisection_and_dumping_runs_as_jobs(slurm, bisect_cache, tmp_path):
    write(tmp_path / "check.py", CHECK)
    skips = [part for stage in ("diff", "passes", "reduce", "isolate") for part in ("--skip", stage)]
    done = run_cli(
        "triage",
        "--good",
        GOOD,
        "--bad",
        BAD,
        "--executor",
        "slurm",
        *skips,
        "--json",
        "--",
        "check.py",
        cwd=tmp_path,
        env=_env(slurm, bisect_cache),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads(done.stdout)
    assert (state["releases"]["last_good"], state["releases"]["first_bad"]) == ("0.4.30", BAD)
    jobs = [manifest(Path(state["dumps"][side]["bundle"]))["slurm"] for side in ("last_good", "first_bad")]
    assert [j["state"] for j in jobs] == ["COMPLETED", "FAILED"]  # the dumping runs: exit 0 and 1, as jobs


def test_a_stalled_slurm_job_reads_every_tasks_stacks_on_the_node(slurm, tmp_path):
    from tests.integration.test_stuck_runs import STUCK

    (tmp_path / "stuck.py").write_text(STUCK)
    done = run_cli(
        "run", "stuck.py", "--processes", "2", "--stall", "20", "--timeout", "300", "--executor", "slurm", "--json",
        cwd=tmp_path, env=_env(slurm), timeout=400,
    )  # fmt: skip
    assert done.returncode == 124, done.stderr[-3000:]
    data = json.loads(done.stdout)
    stuck, bundle = data["stuck"], Path(data["bundle"])
    assert stuck["trigger"] == "stall" and "read on the node" in stuck["reason"]
    by_process = {p["process"]: p for p in stuck["processes"]}
    assert "AllGather" in by_process[0]["collective"] and by_process[1]["state"] == "python"
    assert stuck["odd"] == [by_process[1]["pid"]] and "next_batch" in stuck["summary"]
    assert sorted(p.name for p in (bundle / "stacks").iterdir()) == ["p0.txt", "p1.txt", "summary.txt"]
    shown = run_cli("inspect", str(bundle), env=_env(slurm))
    assert "stuck:" in shown.stdout and "<- odd one out" in shown.stdout
