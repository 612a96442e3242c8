"""`xlatools bisect releases --jobs K` on the real jax 0.4.28..0.4.31 fixture (environments cached in the
session's bisect cache): the answer and state of K = 1, steps run side by side, an interrupted round
continued with another K without running a step twice. Cost: about 40 s with cached environments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers import bundles, manifest, sigint_default
from tests.integration.bisect.test_bisect_releases import BAD, CHECK, GOOD, states, write


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_four_jobs_test_every_candidate_at_once_and_give_the_same_answer(bx, tmp_path):
    write(tmp_path / "check.py", CHECK)
    done = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--jobs", "4", "--json", "--", "check.py")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["status"] == "done"
    assert data["result"]["first_bad"]["key"] == "0.4.31" and data["result"]["last_good"]["key"] == "0.4.30"
    steps = data["steps"]
    assert sorted(s["n"] for s in steps) == [1, 2, 3, 4] and len({s["key"] for s in steps}) == 4
    assert {s["role"] for s in steps} == {"good end", "bad end", "search"}
    latest_start = max(_when(s["started"]) for s in steps)
    assert all(_when(s["finished"]) > latest_start for s in steps)  # one round: all four ran side by side
    first_bad = Path(data["folder"]) / "first-bad"
    assert manifest(first_bad.resolve())["jax"]["jax"] == "0.4.31"
    assert "(quiet: output in the bundle's logs)" in done.stderr  # side-by-side programs do not share the terminal

    again = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--json", "--", "check.py")  # K = 1, same folder
    assert again.returncode == 0 and json.loads(again.stdout)["steps"] == steps and "step 1:" not in again.stderr


def _start(tmp_path: Path, bisect_cache: Path, jobs: int, check: str) -> subprocess.Popen:
    env = {**os.environ, "XLATOOLS_CACHE_DIR": str(bisect_cache), "JAX_PLATFORMS": "cpu", "NO_COLOR": "1"}
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
            "--jobs",
            str(jobs),
            "--",
            check,
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=sigint_default,
    )


def _steps_running(tmp_path: Path, proc: subprocess.Popen, recorded: int) -> None:
    """Until `recorded` steps are in the state and the next round's programs are running."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the bisection ended before it could be interrupted"
        found = states(tmp_path)
        if found and len(json.loads(found[0].read_text())["steps"]) >= recorded:
            running = [
                b
                for b in bundles(found[0].parent / "steps")
                if (b / "manifest.json").is_file() and manifest(b)["status"] == "running"
            ]
            if len(running) >= 2:
                return
        time.sleep(0.1)
    raise AssertionError("no progress")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_an_interrupted_round_continues_with_another_k_without_repeating_a_step(bx, tmp_path, bisect_cache, sig):
    check = f"slow_check_{tmp_path.name}.py"  # its own name: pgrep below must not see another test's checks
    write(tmp_path / check, "import time\ntime.sleep(4)\n" + CHECK)
    proc = _start(tmp_path, bisect_cache, jobs=2, check=check)
    try:
        _steps_running(tmp_path, proc, recorded=2)  # round one (the ends) done, round two running
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130
    [state_file] = states(tmp_path)
    recorded = json.loads(state_file.read_text())
    assert recorded["status"] == "interrupted" and "interrupted" in recorded["message"]
    assert len(recorded["steps"]) == 2  # the interrupted round's steps are not recorded
    stopped = [manifest(b)["status"] for b in bundles(state_file.parent / "steps")]
    assert sorted(stopped) == ["failed", "interrupted", "interrupted", "ok"]  # their programs were stopped
    assert not subprocess.run(["pgrep", "-f", check], capture_output=True, text=True).stdout.split()

    done = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--jobs", "3", "--json", "--", check)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["result"]["first_bad"]["key"] == "0.4.31"
    assert data["steps"][:2] == recorded["steps"]
    keys = [s["key"] for s in data["steps"]]
    assert len(keys) == len(set(keys)) == 4
    assert sorted(s["n"] for s in data["steps"]) == [1, 2, 3, 4]
