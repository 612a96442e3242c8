"""The plan of a multi-process run (pure): each process's identity, devices and own bundle paths; proxies."""

from pathlib import Path

import pytest

from tests.unit.test_run_plan import plan
from xlatools.errors import UsageError
from xlatools.run.multiprocess import (
    MAX_PROCESSES,
    check_counts,
    per_process_path,
    plan_processes,
    process_limit,
    settle_processes,
)
from xlatools.run.presets.catalog import Catalog
from xlatools.run.program import Program, parse_program


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load()


def test_every_bundle_path_gets_one_per_process():
    assert per_process_path("{bundle}/xla_dump", 1) == "{bundle}/xla_dump/p1"
    assert per_process_path("{bundle}/torch_xla/tensors.txt", 2) == "{bundle}/torch_xla/p2/tensors.txt"
    assert per_process_path("{bundle}/metrics.json", 0) == "{bundle}/p0.metrics.json"
    assert per_process_path("/elsewhere/x", 1) == "/elsewhere/x" and per_process_path("{bundle}", 1) == "{bundle}"


def test_each_process_knows_its_part_and_dumps_alone(catalog):
    p = plan(
        catalog,
        program=parse_program("smoke:multiprocess", None, [], Path("/work")),
        dump=True,
        presets=["jax:ir"],
        devices_per_process=2,
    )
    assert len(p.processes) == 2  # smoke:multiprocess runs 2 processes unless told otherwise
    bound = p.bind(Path("/b b"))
    second = bound.processes[1].bind(coordinator="127.0.0.1:4242")
    env = second.child_env(bound.child_env({}))
    assert env["JAX_PROCESS_ID"] == "1" and env["JAX_NUM_PROCESSES"] == "2"
    assert env["JAX_COORDINATOR_ADDRESS"] == env["JAX_COORDINATOR_BIND_ADDRESS"] == "127.0.0.1:4242"
    assert env["JAX_NUM_CPU_DEVICES"] == "2" and env["JAX_LOCAL_DEVICE_IDS"] == "2,3"
    assert '--xla_dump_to="/b b/xla_dump/p1"' in env["XLA_FLAGS"]  # joined after binding: quoted
    assert env["JAX_DUMP_IR_TO"] == "/b b/jax_ir/p1"
    assert "/b b/p1.smoke_results.json" in second.argv
    assert (second.stdout, second.stderr, second.dump_dir) == (
        "/b b/p1.stdout.log",
        "/b b/p1.stderr.log",
        "/b b/xla_dump/p1",
    )
    assert any("2 processes, 2 devices each" in note for note in p.notes)


def test_a_run_without_dumps_keeps_the_run_xla_flags(catalog):
    p = plan(catalog, processes=3, xla_flags=["--xla_cpu_use_thunk_runtime=false"])
    assert [q.id for q in p.processes] == [0, 1, 2] and all(
        q.xla_flags is None and q.dump_dir is None for q in p.processes
    )
    assert "XLA_FLAGS" not in p.processes[2].child_env({})  # the run's own XLA_FLAGS stay as they are
    assert plan(catalog).processes == []  # one process: the plan of a run as it always was


def test_proxies_get_loopback_in_no_proxy():
    processes, notes = plan_processes(
        2, 1, ["/py", "x.py"], {}, [], {"https_proxy": "http://proxy:3128", "no_proxy": "internal"}
    )
    assert processes[0].env["no_proxy"] == processes[0].env["NO_PROXY"] == "internal,127.0.0.1,localhost"
    assert any("proxy" in note for note in notes)
    quiet, _ = plan_processes(2, 1, ["/py", "x.py"], {}, [], {})
    assert "no_proxy" not in quiet[0].env  # jax warns about any *_proxy variable: none added without need


def test_bad_counts_are_refused():
    with pytest.raises(UsageError, match="at least 2 processes"):
        settle_processes(1, ("multiprocess",), "jax")
    with pytest.raises(UsageError, match="must be 1 or more"):
        settle_processes(0, (), "jax")
    with pytest.raises(UsageError, match="for jax programs"):
        settle_processes(2, (), "tensorflow")
    with pytest.raises(UsageError, match="--devices-per-process 0"):
        plan_processes(2, 0, [], {}, [], {})
    assert settle_processes(None, ("dot",), "jax") == 1 and settle_processes(None, ("multiprocess",), "jax") == 2


def test_counts_the_machine_cannot_hold_are_refused_with_the_limit_and_why():
    most, why = process_limit(local=True)
    assert 2 <= most <= MAX_PROCESSES and "GiB of memory" in why
    with pytest.raises(UsageError, match=rf"--processes 99999999999999999999: more than {most}.*GiB") as refused:
        check_counts(99999999999999999999, 1, (most, why))
    assert f"--processes {most} or fewer" in (refused.value.hint or "")
    with pytest.raises(UsageError, match="--devices-per-process 100000: more than 1024"):
        check_counts(2, 100_000, (most, why))
    assert process_limit(local=False)[0] == MAX_PROCESSES
    check_counts(most, 1024, (most, why))
    check_counts(None, 1, (most, why))


def test_smoke_multiprocess_is_not_part_of_smoke_all():
    assert "multiprocess" not in parse_program(None, None, [], Path("/")).name.split(",")
    assert parse_program("smoke:multiprocess", None, [], Path("/")) == Program("smoke", "multiprocess")


def _with_processes(tmp_path, processes):
    import json

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "bundles-v1" / "run-smoke-dot"
    data = json.loads((fixtures / "manifest.json").read_text())
    bundle = tmp_path / "b"
    bundle.mkdir(parents=True)
    (bundle / "manifest.json").write_text(json.dumps({**data, "processes": processes, "first_failed": 1}))
    return bundle


def test_the_processes_list_is_typed_and_checked(tmp_path):
    from xlatools.records import read_bundle
    from xlatools.vocab import ProcessStatus

    row = {
        "id": 1,
        "status": "failed",
        "returncode": -11,
        "signal": "SIGSEGV",
        "first_failure": True,
        "stdout": "p1.stdout.log",
        "stderr": "p1.stderr.log",
        "env": {"JAX_PROCESS_ID": "1"},
    }
    record = read_bundle(_with_processes(tmp_path / "ok", [row]))
    assert record.processes[0].status == ProcessStatus.FAILED and record.first_failed == 1
    with pytest.raises(UsageError) as bad:
        read_bundle(_with_processes(tmp_path / "bad", [{**row, "status": "exploded", "id": "one"}]))
    keys = {problem.key for problem in bad.value.problems}
    assert {"processes[0].status", "processes[0].id"} <= keys
