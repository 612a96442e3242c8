"""`xlatools run` under bad input and faults, through the real CLI: paths with spaces, typed flag
values, exit codes a CI job can trust, a full disk, quiet log runs, `latest`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import bundles, manifest, require

PROGRAM = "import jax, jax.numpy as jnp\nprint(jax.jit(lambda x, y: 2.0 * jnp.dot(x, y) + 1.0)(jnp.ones((4, 4)), jnp.ones((4, 4)))[0, 0])\n"


@pytest.fixture
def prog(tmp_path) -> str:
    (tmp_path / "prog.py").write_text(PROGRAM)
    return "prog.py"


@pytest.mark.parametrize("which", ["jax_python", "old_jax_python"])
def test_a_space_in_out_keeps_the_dumps_in_the_bundle(xl, tmp_path, prog, which, request):
    python = request.getfixturevalue(which)
    result = xl(
        "run", prog, "--dump", "--out", "out dir", "--python", python, "--xla-flag=--xla_dump_hlo_pass_re=a b|.*"
    )  # a user flag with a space, too
    assert result.returncode == 0, result.stderr
    [bundle] = bundles(tmp_path / "out dir")
    data = manifest(bundle)
    assert data["dump"]["modules"], "the dumps are in the bundle"
    assert any("after_" in f["path"] for f in data["files"]), "the pass regex with a space reached XLA"
    assert not (tmp_path / "out").exists(), "nothing dumped into a sibling folder"


@pytest.mark.parametrize(
    "flag,expected",
    [
        ("--xla_dump_hlo_pass_re", "takes a value (string)"),
        ("--xla_cpu_enable_fast_math=maybe", "expects a bool (true or false), not 'maybe'"),
        ("--xla_dump_hlo_pass_re=(", "is a regular expression, and '(' does not compile"),
        ("--xla_dump_max_hlo_modules=lots", "expects a whole number (int32), not 'lots'"),
    ],
)
def test_a_badly_typed_flag_value_is_refused_before_launch(xl, tmp_path, prog, flag, expected):
    result = xl("run", prog, "--dump", f"--xla-flag={flag}")
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr and "e.g. --" in result.stderr
    assert "Traceback" not in result.stderr and "Flags:" not in result.stderr
    assert not bundles(tmp_path / "artifacts"), "nothing was started"


def test_program_failures_exit_1_with_the_status_or_signal_named(xl, tmp_path):
    (tmp_path / "exit3.py").write_text("import sys; sys.exit(3)\n")
    result = xl("run", "exit3.py")
    assert result.returncode == 1 and "program exit 3" in result.stderr
    assert xl("run", "exit3.py", "--exit-code", "program").returncode == 3
    (tmp_path / "crash.py").write_text("import ctypes\nctypes.string_at(0)\n")
    result = xl("run", "crash.py", "--json")
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    assert (summary["signal"], summary["program_outcome"]) == ("SIGSEGV", "killed by SIGSEGV")
    assert "killed by SIGSEGV" in (Path(summary["bundle"]) / "summary.txt").read_text()
    assert "Fatal Python error: Segmentation fault" in (Path(summary["bundle"]) / "stderr.log").read_text()
    assert xl("run", "crash.py", "--exit-code", "program").returncode == 128 + 11


def test_a_program_and_a_module_together_are_refused(xl, tmp_path, prog):
    result = xl("run", prog, "-m", "json.tool")
    assert result.returncode == 2 and "both a program (prog.py) and a module (-m json.tool)" in result.stderr
    (tmp_path / "data.json").write_text("{}")
    assert xl("run", "-m", "json.tool", "data.json").returncode == 0  # a module with an argument is fine


def test_latest_points_at_the_newest_finished_bundle(xl, tmp_path, probe_cache, jax_python):
    (tmp_path / "quick.py").write_text("print('done')\n")
    assert xl("run", "quick.py").returncode == 0
    finished = (tmp_path / "artifacts" / "latest").resolve()
    (tmp_path / "slow.py").write_text("import time; time.sleep(60)\n")
    env = {**os.environ, "XLATOOLS_CACHE_DIR": str(probe_cache), "JAX_PLATFORMS": "cpu", "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlatools", "run", "slow.py", "--timeout", "4"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while len(bundles(tmp_path / "artifacts")) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(bundles(tmp_path / "artifacts")) == 2
        assert (tmp_path / "artifacts" / "latest").resolve() == finished  # not the running one
    finally:
        proc.wait(timeout=60)
    assert (tmp_path / "artifacts" / "latest").resolve() != finished
    assert manifest(tmp_path / "artifacts" / "latest")["status"] == "timeout"


def test_quiet_run_keeps_output_in_the_bundle_with_a_heartbeat_and_shows_the_tail_on_failure(xl, tmp_path):
    (tmp_path / "chatty.py").write_text(
        "import sys, time\nfor i in range(3000):\n    print('line', i, file=sys.stderr)\ntime.sleep(2.5)\nsys.exit(4)\n"
    )
    result = xl("run", "chatty.py", "--quiet", env={"XLATOOLS_HEARTBEAT_S": "1"})
    assert result.returncode == 1
    assert "... running" in result.stderr and "stderr.log" in result.stderr
    assert "line 2999" in result.stderr and "line 10\n" not in result.stderr  # only the tail
    log = (tmp_path / "artifacts" / "latest" / "stderr.log").read_text()
    assert log.count("\n") == 3000


def test_vmodule_patterns_that_matched_no_log_line_are_named(xl, tmp_path, prog):
    result = xl("run", prog, "--vmodule", "dot_decomposer=2", "--vmodule", "hlo_pass_pipeline=1")
    assert result.returncode == 0, result.stderr
    assert "vmodule pattern 'dot_decomposer' matched no log line" in result.stderr
    assert "'hlo_pass_pipeline' matched" not in result.stderr
    notes = manifest(tmp_path / "artifacts" / "latest")["notes"]
    assert any("dot_decomposer" in note for note in notes)


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (needs root and mount); removed after the test."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    can = os.geteuid() == 0 and shutil.which("mount")
    done = (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
        if can
        else None
    )
    require("tmpfs", bool(done) and done.returncode == 0, "mounting a small tmpfs needs root and mount(8)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_stops_the_program_and_says_so(xl, tmp_path, small_disk):
    (tmp_path / "flood.py").write_text(
        "import sys, time\nfor i in range(200000):\n    sys.stdout.write('x' * 99 + '\\n')\ntime.sleep(60)\n"
    )
    started = time.monotonic()
    result = xl("run", "flood.py", "--out", str(small_disk), "--quiet")
    assert result.returncode == 3, result.stderr
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    assert time.monotonic() - started < 45, "the program was stopped, not waited for"
    [bundle] = bundles(small_disk)
    data = manifest(bundle)
    assert data["status"] == "error" and "No space left on device" in data["error"]


def test_an_out_root_where_no_bundle_can_be_made_is_bad_input(xl, prog):
    result = xl("run", prog, "--out", "/proc")
    assert result.returncode == 2 and "cannot create a bundle in /proc" in result.stderr
    assert "Traceback" not in result.stderr
