"""`xlatools run --processes N`: real jax distributed jobs on CPU (gloo collectives) with jaxlib 0.10.2
(this interpreter) and 0.12 (XLATOOLS_NEW_JAX_PYTHON), and the readers of their per-process dumps.

Cost: about 6 s per 2-process run on 2 cores; the whole file about 60 s."""

from __future__ import annotations

import html as html_module
import json
import re
from pathlib import Path

import pytest

from tests.helpers import manifest

CRASH = """\
import os, signal, time
import jax
jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                           process_id=int(os.environ["JAX_PROCESS_ID"]))
if jax.process_index() == 1:
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGSEGV)
from jax.experimental import multihost_utils
print("process", jax.process_index(), "waits for the others", flush=True)
multihost_utils.sync_global_devices("never reached by process 1")
"""

STARTUP = """\
import os
import jax
if os.environ["JAX_PROCESS_ID"] == "1":
    raise SystemExit("process 1 cannot start its backend")
jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                           process_id=int(os.environ["JAX_PROCESS_ID"]))
print("process 0 never gets here", flush=True)
"""

# What a jax process whose GPU does not exist does (FIELD_NOTES §10): it raises, then hangs at exit in
# jax.distributed's shutdown, waiting for a peer that waits for it in a collective.
RAISES_THEN_HANGS = """\
import os
import jax
jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                           process_id=int(os.environ["JAX_PROCESS_ID"]))
if jax.process_index() == 1:
    raise RuntimeError("no supported devices found (stand-in)")
from jax.experimental import multihost_utils
multihost_utils.sync_global_devices("never reached by process 1")
"""

HANG = """\
import os, time
import jax
jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                           process_id=int(os.environ["JAX_PROCESS_ID"]))
if jax.process_index() == 1:
    time.sleep(600)
print("process", jax.process_index(), "done", flush=True)
"""


def _smoke(xl, python: str, processes: int, devices: int, out: str) -> tuple[dict, Path]:
    done = xl(
        "run",
        "smoke:multiprocess",
        "--processes",
        str(processes),
        "--devices-per-process",
        str(devices),
        "--python",
        python,
        "--dump",
        "--out",
        out,
        "--json",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    return data, Path(data["bundle"])


@pytest.mark.parametrize("which", ["0.10.2", "0.12"])
def test_smoke_multiprocess_checks_collectives_across_processes(xl, jax_python, request, which):
    python = jax_python if which == "0.10.2" else request.getfixturevalue("new_jax_python")
    processes = 2 if which == "0.10.2" else 3
    data, bundle = _smoke(xl, python, processes, 2, "runs")
    assert data["status"] == "ok" and data["first_failed"] is None
    assert re.fullmatch(r"127\.0\.0\.1:\d+", data["coordinator"])
    rows = data["processes"]
    assert [p["id"] for p in rows] == list(range(processes))
    for row in rows:
        assert (row["status"], row["returncode"], row["signal"], row["devices"]) == ("ok", 0, None, 2)
        [result] = row["smoke"]["results"]
        assert result["name"] == "multiprocess" and result["ok"] and result["max_abs_error"] == 0.0
        assert result["devices"] == 2  # local devices; the collectives span processes x 2
        assert row["env"]["JAX_PROCESS_ID"] == str(row["id"]) and row["env"]["JAX_NUM_PROCESSES"] == str(processes)
        assert row["env"]["JAX_COORDINATOR_ADDRESS"] == data["coordinator"]
        assert f"--xla_dump_to={bundle}/xla_dump/p{row['id']}" in row["env"]["XLA_FLAGS"]
        assert row["dump"]["dir"] == f"xla_dump/p{row['id']}" and row["dump"]["modules"]
        assert (bundle / row["stdout"]).read_text().startswith(f"smoke: process {row['id']} of {processes}")
        assert (bundle / row["stderr"]).is_file()
    assert sorted(p.name for p in (bundle / "xla_dump").iterdir()) == [f"p{i}" for i in range(processes)]
    header = next((bundle / "xla_dump/p0").glob("*jit_body.before_optimizations.txt")).read_text().splitlines()[0]
    assert f"num_partitions={processes * 2}" in header  # one module over every device of every process
    assert "process 1: ok (exit 0)" in (bundle / "summary.txt").read_text()


@pytest.fixture(scope="module")
def smoke_bundle(tmp_path_factory):
    """One 2-process smoke run with dumps (jaxlib 0.10.2), read by the inspect/diff/report/replay tests."""
    import importlib.util
    import sys

    from tests.helpers import require, run_cli

    require("jax", importlib.util.find_spec("jax") is not None, "pip install -e '.[jax]'")
    work = tmp_path_factory.mktemp("mp")
    done = run_cli(
        "run",
        "smoke:multiprocess",
        "--dump",
        "--python",
        sys.executable,
        "--out",
        "runs",
        cwd=work,
        env={"JAX_PLATFORMS": "cpu", "XLATOOLS_CACHE_DIR": str(work / "cache")},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return (work / "runs" / "latest").resolve()


def test_inspect_diff_and_report_read_per_process_dumps(xl, smoke_bundle, tmp_path):
    shown = xl("inspect", str(smoke_bundle))
    assert shown.returncode == 0, shown.stderr
    assert "process 0: ok (exit 0), 1 device(s); logs p0.stdout.log, p0.stderr.log; dump xla_dump/p0" in shown.stdout
    assert "jit_body" in shown.stdout and "showing process 0 of 2" in shown.stderr
    data = json.loads(xl("inspect", str(smoke_bundle), "--process", "1", "--json").stdout)
    assert data["process"] == 1 and data["root"].endswith("xla_dump/p1")
    assert data["modules_differing_between_processes"] == []  # SPMD: the same module in both
    assert [p["status"] for p in data["processes"]] == ["ok", "ok"]
    same = json.loads(xl("inspect", str(smoke_bundle / "xla_dump" / "p1"), "--json").stdout)
    assert same["root"] == data["root"] and same["run"]["status"] == "ok"  # pN keeps its bundle's record
    wrong = xl("inspect", str(smoke_bundle), "--process", "2")
    assert wrong.returncode == 2 and "has dumps of processes 0, 1" in wrong.stderr

    diff = xl("diff", str(smoke_bundle), str(smoke_bundle / "xla_dump" / "p1"), "--json")
    assert diff.returncode == 0, diff.stderr
    found = json.loads(diff.stdout)
    assert found["a"]["dump_dir"].endswith("xla_dump/p0") and found["b"]["dump_dir"].endswith("xla_dump/p1")
    assert any("process 1 of 2" in note for note in found["notes"])

    report = tmp_path / "r.html"
    assert xl("report", str(smoke_bundle), "-o", str(report)).returncode == 0
    html = html_module.unescape(re.sub(r"<[^>]+>", "", report.read_text()))  # the page's text: <wbr> splits values
    assert "p0 ok (exit 0), p1 ok (exit 0)" in html and "p1.stderr.log" in html and "process 0 of 2" in html


def test_replay_says_a_module_needs_several_processes(xl, smoke_bundle):
    done = xl("replay", str(smoke_bundle), "--module", "jit_body")
    assert done.returncode == 3, done.stderr
    assert (
        "cannot replay module 0000 jit_body alone" in done.stderr and "2 devices across the 2 processes" in done.stderr
    )
    assert "xlatools run --processes 2" in done.stderr and "Traceback" not in done.stderr
    auto = xl("replay", str(smoke_bundle), "--process", "1")
    assert auto.returncode == 3 and "cannot replay module" in auto.stderr  # nothing left that one process can run
    assert xl("replay", str(smoke_bundle), "--process", "5").returncode == 2


def test_the_first_process_to_fail_stops_the_others(xl, tmp_path):
    (tmp_path / "crash.py").write_text(CRASH)
    done = xl("run", "crash.py", "--processes", "2", "--out", "runs", "--json", timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["status"] == "failed" and data["first_failed"] == 1
    assert data["signal"] == "SIGSEGV" and data["returncode"] == -11  # the run's own: the first failure's
    p0, p1 = data["processes"]
    assert (p1["status"], p1["signal"], p1["first_failure"]) == ("failed", "SIGSEGV", True)
    assert p0["status"] == "stopped" and not p0["first_failure"]  # it was waiting for process 1 in a collective
    assert data["program_outcome"].startswith(
        "process 1 failed first (killed by SIGSEGV); 1 other stopped; its last line:"
    )
    bundle = Path(data["bundle"])
    assert "waits for the others" in (bundle / "p0.stdout.log").read_text()
    assert "Segmentation fault" in (bundle / "p1.stderr.log").read_text()
    assert manifest(bundle)["processes"][1]["first_failure"] is True


def test_a_process_that_fails_while_jax_distributed_starts_ends_the_run_at_once(xl, tmp_path):
    (tmp_path / "startup.py").write_text(STARTUP)
    done = xl("run", "startup.py", "--processes", "2", "--timeout", "100", "--out", "runs", "--json", timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["first_failed"] == 1 and [p["status"] for p in data["processes"]] == ["stopped", "failed"]
    assert data["processes"][1]["last_lines"][-1] == "process 1 cannot start its backend"
    assert data["duration_s"] < 60  # not the timeout: process 0 was waiting for it to connect


def test_a_process_that_raises_then_hangs_is_stopped_with_its_peers(xl, tmp_path):
    (tmp_path / "hangs.py").write_text(RAISES_THEN_HANGS)
    done = xl(
        "run",
        "hangs.py",
        "--processes",
        "2",
        "--timeout",
        "100",
        "--out",
        "runs",
        "--json",
        timeout=120,
        env={"XLATOOLS_FATAL_QUIET_S": "2"},
    )
    assert done.returncode == 1, done.stderr[-2000:]
    data = json.loads(done.stdout)
    p0, p1 = data["processes"]
    assert data["first_failed"] == 1 and (p0["status"], p1["status"]) == ("stopped", "failed")
    assert p1["outcome"].startswith("printed a fatal error, then no output and no progress for")
    assert "no supported devices found (stand-in)" in data["program_outcome"]
    assert p1["duration_s"] < 25  # jax's own shutdown would wait for 30 s or more
    assert "RuntimeError" in (Path(data["bundle"]) / "p1.stderr.log").read_text()


def test_a_hanging_process_ends_with_the_timeout(xl, tmp_path):
    (tmp_path / "hang.py").write_text(HANG)
    done = xl("run", "hang.py", "--processes", "2", "--timeout", "10", "--out", "runs", "--json", timeout=120)
    assert done.returncode == 124, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["status"] == "timeout" and data["first_failed"] is None
    assert [p["status"] for p in data["processes"]] == ["timeout", "timeout"]  # 0 waits for 1 at shutdown


def test_a_wrong_collective_result_fails_the_smoke(xl):
    done = xl(
        "run", "smoke:multiprocess", "--out", "runs", "--json", env={"XLATOOLS_SMOKE_INJECT_MISMATCH": "multiprocess"}
    )
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert data["first_failed"] in (0, 1)
    assert all(p["smoke"]["results"][0]["ok"] is False for p in data["processes"] if p["smoke"])


def test_bad_multiprocess_input_is_refused(xl, tmp_path):
    cases = {
        ("smoke:multiprocess", "--processes", "1"): "needs at least 2 processes",
        ("smoke:dot", "--processes", "0"): "must be 1 or more",
        ("smoke:dot", "--devices-per-process", "2"): "goes with --processes",
    }
    for args, message in cases.items():
        done = xl("run", *args, "--out", "runs")
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
    assert not (tmp_path / "runs").exists()
    plan = json.loads(xl("run", "smoke:multiprocess", "--dry-run", "--json").stdout)["plan"]
    assert [p["env"]["JAX_PROCESS_ID"] for p in plan["processes"]] == ["0", "1"]
    assert "{bundle}/p1.smoke_results.json" in plan["processes"][1]["argv"]
    assert plan["processes"][1]["env"]["JAX_COORDINATOR_ADDRESS"] == "{coordinator}"  # a free port, once it runs
