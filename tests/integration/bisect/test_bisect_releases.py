"""`xlatools bisect releases` against the real package index and real jax releases.

The behaviour change: `jax.lax.xeinsum` exists in jax 0.4.28-0.4.30 and is gone in 0.4.31 (removed
after its deprecation). Range 0.4.28..0.4.31: 4 candidates, 4 installs (about 80 MB of jaxlib wheels
each on the first download; about 1-2 s each with uv's cache), then every further bisection over
the range reuses the environments (zero installs)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import manifest, sigint_default

GOOD, BAD = "0.4.28", "0.4.31"
CHECK = "import jax.lax\njax.lax.xeinsum  # removed in jax 0.4.31\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def states(root: Path) -> list[Path]:
    return sorted((root / "artifacts" / "bisect").glob("*/bisect.json"))


def test_real_release_bisection_names_the_first_bad_release(bx, tmp_path):
    write(tmp_path / "check.py", CHECK)
    done = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--json", "--", "check.py")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["status"] == "done"
    assert [c["key"] for c in data["candidates"]] == ["0.4.28", "0.4.29", "0.4.30", "0.4.31"]
    assert data["result"]["first_bad"]["key"] == "0.4.31" and data["result"]["last_good"]["key"] == "0.4.30"
    assert data["summary"]["steps"] <= 5  # at most 4-5 installs
    folder = Path(data["folder"])
    first_bad = (folder / "first-bad").resolve()
    assert first_bad == Path(data["result"]["first_bad"]["bundle"])
    assert manifest(first_bad)["jax"]["jax"] == "0.4.31" and manifest(first_bad)["exit_code"] == 1
    assert "no attribute 'xeinsum'" in (first_bad / "stderr.log").read_text()
    assert manifest((folder / "last-good").resolve())["jax"]["jaxlib"] == "0.4.30"
    diff = data["result"]["diff"]  # last-good vs first-bad, by the compare capability
    assert diff["available"] and Path(diff["report"]).is_file()
    assert json.loads(Path(diff["json"]).read_text())["run"]  # the run-level differences (versions, status)
    assert "[bisect] step 1: jax 0.4.28" in done.stderr  # progress on stderr

    job_summary = tmp_path / "summary.md"
    again = bx(
        "bisect",
        "releases",
        "--good",
        GOOD,
        "--bad",
        BAD,
        "--",
        "check.py",
        env={"GITHUB_STEP_SUMMARY": str(job_summary)},
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert "first bad: jax 0.4.31" in again.stdout and "step 1:" not in again.stderr  # finished: nothing re-run
    assert f"last-good vs first-bad: report {diff['report']}" in again.stdout
    assert "### xlatools bisect" in job_summary.read_text() and "first bad: jax 0.4.31" in job_summary.read_text()

    fresh = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--fresh", "--json", "--", "check.py")
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert json.loads(fresh.stdout)["summary"]["install_s"] == 0  # every environment came from the cache
    listed = json.loads(bx("cache", "list", "--json").stdout)["environments"]
    assert {f"jax-{v}-py3.11-cpu" for v in ("0.4.28", "0.4.29", "0.4.30", "0.4.31")} <= {e["name"] for e in listed}

    # The check changes (issue 37): the recorded verdicts judged the old one, so they are not reused; the old
    # bisection is set aside and a fresh one starts (here stopped at once: the new check fails everywhere).
    folder = Path(json.loads(fresh.stdout)["folder"])
    write(tmp_path / "check.py", CHECK + "raise SystemExit('fails on every release now')\n")
    edited = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--json", "--", "check.py")
    assert edited.returncode == 2 and "'good' is not good" in edited.stderr, edited.stderr[-2000:]
    warning = " ".join(edited.stderr.split())
    assert f"the test changed since {folder.name} was recorded ({tmp_path / 'check.py'} (program): content" in warning
    assert "differs): its 4 recorded steps judged the test as it was, so a fresh bisection starts" in warning
    restarted = json.loads((folder / "bisect.json").read_text())
    assert [s["key"] for s in restarted["steps"]] == [GOOD] and restarted["test_files"][0]["role"] == "program"
    assert len(list(folder.parent.glob(f"{folder.name}.*"))) == 2  # set aside by --fresh, then by the change


def _start(tmp_path: Path, bisect_cache: Path, program: str) -> subprocess.Popen:
    env = {"XLATOOLS_CACHE_DIR": str(bisect_cache), "JAX_PLATFORMS": "cpu", "NO_COLOR": "1"}
    import os

    return subprocess.Popen(
        [sys.executable, "-m", "xlatools", "bisect", "releases", "--good", GOOD, "--bad", BAD, "--", program],
        cwd=tmp_path,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=sigint_default,
    )


def _wait_for_steps(tmp_path: Path, count: int, proc: subprocess.Popen) -> list[dict]:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        for path in states(tmp_path):
            try:
                steps = json.loads(path.read_text())["steps"]
            except ValueError:
                continue  # never happens with atomic writes, but do not fail the test on it
            if len(steps) >= count:
                return steps
        assert proc.poll() is None, "the bisection ended before it could be interrupted"
        time.sleep(0.1)
    raise AssertionError("no progress")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_interrupted_bisection_resumes_without_repeating_a_step(bx, tmp_path, bisect_cache, sig):
    write(tmp_path / "slow_check.py", "import time\ntime.sleep(1.5)\n" + CHECK)
    proc = _start(tmp_path, bisect_cache, "slow_check.py")
    try:
        _wait_for_steps(tmp_path, 2, proc)
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    [state_file] = states(tmp_path)
    recorded = json.loads(state_file.read_text())
    if sig == signal.SIGINT:
        assert recorded["status"] == "interrupted" and "interrupted" in recorded["message"]
    done = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--json", "--", "slow_check.py")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["result"]["first_bad"]["key"] == "0.4.31"
    assert data["steps"][: len(recorded["steps"])] == recorded["steps"]  # the record was kept as it was
    keys = [s["key"] for s in data["steps"]]
    assert len(keys) == len(set(keys)), keys  # no step ran twice
    assert f"{len(recorded['steps'])} steps recorded" in done.stderr


def test_bad_input_is_refused_with_exit_2(bx, tmp_path):
    write(tmp_path / "check.py", CHECK)
    cases = {
        ("--good", "0.4.30", "--bad", "0.4.30"): "same version",
        ("--good", "0.4.31", "--bad", "0.4.28"): "newer than --bad",
        ("--good", "zero", "--bad", "0.4.28"): "not a version",
        ("--good", "0.4.28", "--bad", "0.4.99"): "no such jax release",
        ("--good", "0.4.14", "--bad", "0.4.28"): "no jaxlib 0.4.14 for Python 3.11",
    }
    for args, message in cases.items():
        done = bx("bisect", "releases", *args, "--", "check.py")
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    write(tmp_path / "always_bad.py", "raise SystemExit(1)\n")
    done = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--", "always_bad.py")
    assert done.returncode == 2 and "'good' is not good" in done.stderr, done.stderr[-2000:]
    [state_file] = states(tmp_path)
    assert json.loads(state_file.read_text())["status"] == "stopped"
    state_file.write_text('{"schema": "xlatools.bisect/1", "steps": [')
    done = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--", "always_bad.py")
    assert done.returncode == 2 and "cannot be read" in done.stderr and "--fresh" in done.stderr, done.stderr
    done = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--", "missing.py")
    assert done.returncode == 2 and "program not found" in done.stderr


def test_a_repro_pack_is_the_test_of_each_release(bx, tmp_path):
    """--replay PACK: a pack that records no failure (this run's module ran ok) is refused before any step; a pack
    that records one is replayed in each release's environment. This one expects a mismatch that neither 0.4.30
    nor 0.4.31 gives, so 'bad' is not reproduced either: said, and stopped."""
    from xlatools.replay.pack import extract, write_pack

    write(tmp_path / "prog.py", "import jax, jax.numpy as jnp\nprint(jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(4)))\n")
    assert bx("run", "prog.py", "--dump", "--out", "runs").returncode == 0
    packed = bx("repro", "pack", str(tmp_path / "runs" / "latest"), "-o", "prog.repro.tar.gz")
    assert packed.returncode == 0 and "nothing-to-reproduce (exit 5)" in packed.stderr, packed.stderr[-2000:]
    healthy = bx("bisect", "releases", "--good", "0.4.30", "--bad", "0.4.31", "--replay", "prog.repro.tar.gz")
    assert healthy.returncode == 2 and "the pack records no failure" in healthy.stderr, healthy.stderr[-3000:]
    assert not states(tmp_path)  # refused before the first step
    root = extract(tmp_path / "prog.repro.tar.gz", tmp_path / "unpacked")
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    files.pop("SHA256SUMS")
    index = json.loads(files["pack.json"])
    index["modules"][0]["outcome"] = "mismatch"
    files["pack.json"] = json.dumps(index).encode()
    write_pack(files, tmp_path / "failing.tar.gz")
    done = bx("bisect", "releases", "--good", "0.4.30", "--bad", "0.4.31", "--replay", "failing.tar.gz")
    assert done.returncode == 2, done.stderr[-3000:]
    assert "'bad' is not bad" in done.stderr and "not-reproduced" in done.stderr and "Traceback" not in done.stderr
    steps = json.loads(states(tmp_path)[0].read_text())["steps"]
    assert manifest(Path(steps[0]["bundle"]))["kind"] == "replay"  # a real replay bundle per step


def test_dry_run_lists_candidates_and_leaves_out_versions_without_a_jaxlib(bx, tmp_path):
    write(tmp_path / "check.py", CHECK)
    done = bx("bisect", "releases", "--good", "0.4.36", "--bad", "0.5.1", "--dry-run", "--json", "--", "check.py")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert [c["key"] for c in plan["candidates"]] == ["0.4.36", "0.4.38", "0.5.0", "0.5.1"]
    assert plan["excluded"] == ["0.4.37"]  # jax 0.4.37 shipped without a jaxlib 0.4.37
    assert plan["candidates"][0]["requirements"][:2] == ["jax==0.4.36", "jaxlib==0.4.36"]
    assert not (tmp_path / "artifacts").exists()
    nightly = bx("bisect", "releases", "--good", GOOD, "--bad", BAD, "--nightly", "--dry-run", "--", "check.py")
    assert nightly.returncode == 3 and "lists no jax/jaxlib nightlies" in nightly.stderr, nightly.stderr


def test_cache_prune_removes_unfinished_environments_and_refuses_unknown_names(bx, bisect_cache):
    unfinished = bisect_cache / "envs" / "jax-9.9.9-py3.11-cpu"
    unfinished.mkdir(parents=True)  # as a killed install leaves it: no xlatools-env.json
    listed = bx("cache", "list")
    assert "jax-9.9.9-py3.11-cpu" in listed.stdout and "(unfinished)" in listed.stdout
    dry = json.loads(bx("cache", "prune", "--all", "--dry-run", "--json").stdout)
    assert "jax-9.9.9-py3.11-cpu" in {e["name"] for e in dry["removed"]} and unfinished.exists()
    done = json.loads(bx("cache", "prune", "--json").stdout)
    assert [e["name"] for e in done["removed"]] == ["jax-9.9.9-py3.11-cpu"] and not unfinished.exists()
    missing = bx("cache", "prune", "jax-0.0.0-py3.11-cpu")
    assert missing.returncode == 2 and "no cached environment" in missing.stderr
