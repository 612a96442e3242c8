"""Replay logic without processes: plans, GPU paths (mocked target), verdicts, exit codes, .npz and literals."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.replay import Comparison, ModuleRecord, OutputDigest
from xlatools.replay import execute as replay_execute
from xlatools.proctree import signal_name
from xlatools.replay.jobs import Materials, job_spec
from xlatools.replay.plan import ReplayRequest, plan_replay
from xlatools.replay.outcome import RunRecord, exit_code, module_outcome
from xlatools.replay.repro_verdict import verdict
from xlatools.replay.sources import ModuleSource, is_helper
from xlatools.run import flag_probe
from xlatools.run import target as targets
from xlatools.run.target import ProbedInterpreter

GPU = ProbedInterpreter(
    python="/py",
    jax="0.10.2",
    jaxlib="0.10.2",
    backend="gpu",
    plugins=["jax-cuda12-plugin"],
    devices=[{"id": 0, "platform": "gpu", "kind": "NVIDIA H100 80GB HBM3"}],
)
CPU = ProbedInterpreter(
    python="/py", jax="0.10.2", jaxlib="0.10.2", backend="cpu", devices=[{"id": 0, "platform": "cpu"}]
)
MODULE = ModuleSource("jit_fn", 0, text=Path("/d/module_0000.jit_fn.before_optimizations.txt"))


@pytest.fixture
def fake_target(monkeypatch):
    monkeypatch.setattr(flag_probe, "unknown_flags", lambda target, flags, **_: ([], {n: "table" for n in flags}))

    def use(target):
        monkeypatch.setattr(targets, "probe", lambda python, platform, *_, **__: target)

    return use


def _request(**kwargs):
    return ReplayRequest(source=Path("/d"), python="/py", **kwargs)


def test_gpu_test_run_with_cpu_reference(fake_target):
    fake_target(GPU)
    prepared = replay_execute.prepare(_request(platform="gpu", references=["cpu"]), ("dump", [MODULE]))
    test, reference = prepared.plan.runs
    assert (
        test.env({}, GPU.gpu_platform(), None)["JAX_PLATFORMS"] == "cuda,cpu"
    )  # the CPU beside it: host callbacks need one
    assert reference.label == "reference-cpu" and reference.env({}, "cuda", None)["JAX_PLATFORMS"] == "cpu"
    # the reference compares the test's outputs against its own, on the test's inputs
    spec = job_spec(
        prepared.plan.request, Materials({"kind": "text", "path": "m.txt"}), reference, Path("/b/ref"), None
    )
    assert spec["inputs"]["mode"] == "random"


def test_reference_takes_the_tests_inputs_and_outputs(tmp_path):
    plan = plan_replay(_request(references=["cpu"]), "dump", [MODULE])
    (tmp_path / "inputs.npz").write_bytes(b"")
    (tmp_path / "outputs.npz").write_bytes(b"")
    spec = job_spec(plan.request, Materials({"kind": "text", "path": "m"}), plan.runs[1], tmp_path / "r", tmp_path)
    assert spec["inputs"] == {"mode": "file", "path": str(tmp_path / "inputs.npz")}
    assert spec["expected"] == [{"label": "reference-cpu", "path": str(tmp_path / "outputs.npz"), "role": "reference"}]


def test_gpu_platform_without_gpu_is_environment_missing(fake_target):
    fake_target(CPU)
    with pytest.raises(EnvironmentMissing, match="sees no GPU"):
        replay_execute.prepare(_request(platform="gpu"), ("dump", [MODULE]))


def test_rocm_plugin_picks_rocm(fake_target):
    rocm = ProbedInterpreter(
        python="/py",
        jaxlib="0.10.2",
        backend="gpu",
        plugins=["jax-rocm60-plugin"],
        devices=[{"id": 0, "platform": "gpu"}],
    )
    fake_target(rocm)
    plan = replay_execute.prepare(_request(platform="gpu"), ("dump", [MODULE])).plan
    assert plan.runs[0].env({}, rocm.gpu_platform(), None)["JAX_PLATFORMS"] == "rocm,cpu"


def test_test_flags_and_reference_flags_are_separate():
    plan = plan_replay(
        _request(
            xla_flags=["--xla_cpu_enable_fast_math=true"],
            disable_passes=["algsimp", "cse"],
            no_opt=True,
            reference_pythons=["/old"],
            reference_xla_flags=["--xla_foo=1"],
        ),
        "dump",
        [MODULE],
        [("--xla_dump_hlo_as_text", "--dump hlo")],
    )
    test, ref = plan.runs
    assert test.xla_flags == [
        "--xla_dump_hlo_as_text",
        "--xla_cpu_enable_fast_math=true",
        "--xla_disable_hlo_passes=algsimp,cse",
        "--xla_backend_optimization_level=0",
    ]
    assert ref.python == "/old" and ref.xla_flags == ["--xla_foo=1"]
    env = test.env({"XLA_FLAGS": "--xla_caller=1"}, "cuda", "/b/dump")
    assert "--xla_caller" not in env["XLA_FLAGS"] and env["XLA_FLAGS"].endswith("--xla_dump_to=/b/dump")


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"iterations": 0}, "--iterations"),
        ({"reference": None, "references": ["tpu"]}, "--reference tpu"),
        ({"platform": "tpu"}, "--platform"),
        ({"inputs": "nothing.npz"}, "--inputs"),
        ({"source_from": "x"}, "--from"),
        ({"xla_flags": ["xla_no_dashes"]}, "not an XLA flag"),
    ],
)
def test_bad_options(kwargs, message):
    kwargs.pop("reference", None)
    with pytest.raises(UsageError, match=message):
        plan_replay(_request(**kwargs), "dump", [MODULE])


def test_outcome_and_exit_codes():
    ok = RunRecord(label="test", python="/py", comparisons=[Comparison(against="snapshot", ok=True)])
    bad = RunRecord(label="reference-cpu", python="/py", comparisons=[Comparison(against="reference-cpu", ok=False)])
    crash = RunRecord(label="test", python="/py", failure="crash", signal="SIGABRT")
    assert module_outcome([ok]) == ("ok", None)
    assert module_outcome([ok, bad]) == ("mismatch", "reference-cpu")
    assert module_outcome([crash, bad]) == ("crash", "test")
    assert exit_code(["ok", "ok"]) == 0 and exit_code(["ok", "mismatch"]) == 1 and exit_code(["crash"]) == 1
    assert exit_code(["input-error", "crash"]) == 2 and exit_code(["timeout"]) == 124
    assert signal_name(-6) == "SIGABRT" and signal_name(1) is None


def _module(outcome="mismatch", fingerprint="f" * 64, outputs=("d1",), phase="compare", message=None):
    """A module as a replay records it: a mismatch is the test's comparison with its snapshot, failed."""
    test = RunRecord(label="test", python="/py", phase=phase, signal=None, message=message)
    if outcome in ("ok", "mismatch"):
        test.comparisons = [Comparison(against="snapshot", ok=outcome == "ok", mismatches=int(outcome != "ok"))]
    return ModuleRecord(
        name="jit_fn",
        id=0,
        outcome=outcome,
        failed_run="test" if outcome != "ok" else None,
        fingerprint=fingerprint,
        outputs=[OutputDigest(shape=[], dtype="float32", sha256=d) for d in outputs],
        runs=[test],
    )


def _expected(**kwargs):
    from xlatools.replay.repro_verdict import expected_of

    return expected_of(_module(**kwargs))


def test_verdicts():
    expected = [_expected()]
    assert verdict(expected, [_module()]).outcome == "reproduced"
    other = verdict(expected, [_module(outcome="ok")])
    assert (
        other.outcome == "not-reproduced" and "jit_fn: ok, expected mismatch against snapshot" in other.differences[0]
    )
    moved = _module(fingerprint="e" * 64)
    assert verdict(expected, [moved], "class").outcome == "reproduced"  # differences listed, not decisive
    assert verdict(expected, [moved], "class").differences
    assert verdict(expected, [moved], "fingerprint").outcome == "not-reproduced"
    assert verdict(expected, [_module(outputs=("d2",))], "outputs").outcome == "not-reproduced"
    unloadable = _module(outcome="compile-error", phase="load", message="Syntax error")
    assert verdict(expected, [unloadable]).outcome == "cannot-run"
    assert verdict(expected, []).outcome == "cannot-run"
    assert verdict(expected, [_module()]).exit_code == 1


def test_a_tool_failure_is_never_a_verdict_and_differences_are_said_once():
    """Issue 19: a crash in loading or a host callback that ran is cannot-run, whatever was expected."""
    from xlatools.replay.outcome import tool_failure

    expected = [_expected(outcome="ok")]
    refused = _module(outcome="cannot-run", phase="run", message="refused by design: a host callback ran")
    refused.runs[0].failure = "cannot-run"
    assert tool_failure(refused) and verdict(expected, [refused]).outcome == "cannot-run"
    crash_in_load = _module(outcome="crash", phase="load")
    crash_in_load.runs[0].failure = "crash"
    assert verdict(expected, [crash_in_load]).exit_code == 3
    compiled_crash = _module(outcome="crash", phase="compile")
    compiled_crash.runs[0].failure = "crash"
    assert tool_failure(compiled_crash) is None  # a compiler crash is about the module
    answer = verdict(expected, [_module(outcome="mismatch")])
    assert answer.outcome == "not-reproduced" and answer.differences
    assert not any(d in answer.reason for d in answer.differences)  # the reason counts, the list says them
    assert exit_code(["ok", "cannot-run"]) == 3 and exit_code(["cannot-run", "mismatch"]) == 1
    lacks = _module(
        outcome="compile-error",
        phase="compile",
        message="JaxRuntimeError: NOT_FOUND: No registered implementation for untyped custom call to lapack_sgetrf for Host",
    )
    lacks.runs[0].failure = "compile-error"
    answer = verdict(expected, [lacks])  # a 0.4.30 module on 0.10.2: its LAPACK kernel was renamed
    assert answer.outcome == "cannot-run" and "lapack_sgetrf" in answer.reason


def test_helper_modules():
    assert is_helper("jit_iota") and is_helper("jit_convert_element_type") and is_helper("jit__where")
    assert not is_helper("jit_fn") and not is_helper("jit_train_step")


def test_npz_and_literals_round_trip(tmp_path):
    np = pytest.importorskip("numpy")
    import struct

    from xlatools.replay.hloproto import flatten_literal, schema
    from xlatools.replay.npz import npy_bytes, strings_npy, write_npz

    literal = schema()["LiteralProto"]()
    literal.shape.element_type = 11  # F32
    literal.shape.dimensions.extend([2, 3])
    literal.shape.layout.minor_to_major.extend([0, 1])  # column-major
    literal.f32s.extend([0, 3, 1, 4, 2, 5])
    (array,) = flatten_literal(literal, Path("x"))
    assert array.physical_shape == [3, 2] and array.data == struct.pack("<6f", 0, 3, 1, 4, 2, 5)
    write_npz(
        tmp_path / "a.npz",
        {
            "a0": npy_bytes(array.storage, array.physical_shape, array.data),
            "s": npy_bytes("<i4", [], struct.pack("<i", 7)),
            "__dtypes__": strings_npy(["float32", "int32"]),
        },
    )
    with np.load(tmp_path / "a.npz") as data:
        np.testing.assert_array_equal(data["a0"].T, [[0, 1, 2], [3, 4, 5]])  # the target transposes back
        assert data["s"].shape == () and int(data["s"]) == 7 and list(data["__dtypes__"]) == ["float32", "int32"]
    import importlib.util

    from xlatools.replay.jobs import PROBE

    spec = importlib.util.spec_from_file_location("replay_arrays_probe", PROBE.parent / "replay_arrays.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    logical, scalar = probe.load_arrays({"path": str(tmp_path / "a.npz"), "minor_to_major": [[0, 1], []]})
    np.testing.assert_array_equal(logical, [[0, 1, 2], [3, 4, 5]])
    row = probe.compare_one(
        np.array([1.0, np.nan, 3.0], np.float32), np.array([1.0005, 2.0, np.nan], np.float32), 1e-3, 1e-3
    )
    assert (row["mismatches"], row["nan_mismatches"]) == (2, 2)
    assert probe.compare_one(np.array([1, 2]), np.array([1, 3]), 1.0, 1.0)["mismatches"] == 1  # ints: exact


def test_snapshot_with_unconvertible_literals_reads_without_them(tmp_path):
    pytest.importorskip("google.protobuf")
    from xlatools.replay.hloproto import read_snapshot, schema

    module = schema()["HloModuleProto"](name="m", computations=[b"opaque"])
    snapshot = schema()["HloSnapshot"]()
    snapshot.hlo.hlo_module = module.SerializeToString()
    argument = snapshot.arguments.add()
    argument.shape.element_type = 21  # S4: not converted
    argument.shape.dimensions.append(2)
    path = tmp_path / "m.snapshot.1.pb"
    path.write_bytes(snapshot.SerializeToString())
    with pytest.raises(UsageError, match="cannot convert") as caught:
        read_snapshot(path)
    assert "--inputs random" in caught.value.hint
    assert read_snapshot(path, literals=False).module.name == "m"


def test_references_are_named_by_their_jax_version():
    from xlatools.replay.plan import RunConfig, label_references
    from xlatools.vocab import Platform

    def run(label, python):
        return RunConfig(label=label, role="reference", python=python, platform=Platform.CPU)

    runs = [
        run("test", "/a"),
        run("reference-cpu", "/a"),
        run("reference-python-1", "/old"),
        run("reference-python-2", "/old-copy"),
        run("reference-python-3", "/unprobed"),
    ]
    label_references(runs, {"/a": "0.10.2", "/old": "0.4.30", "/old-copy": "0.4.30"})
    assert [r.label for r in runs] == [
        "test",
        "reference-cpu",
        "reference-jax-0.4.30",
        "reference-jax-0.4.30-2",
        "reference-python-3",
    ]


def test_snapshots_are_ordered_by_execution_and_picked_by_index(tmp_path):
    import os

    from xlatools.replay.sources import by_execution, pick_execution

    for n, name in enumerate(["m.snapshot.77.pb", "m.snapshot.12.pb", "m.snapshot.5.pb"]):
        (tmp_path / name).write_bytes(b"")
        os.utime(tmp_path / name, ns=(10**9 * n, 10**9 * n))
    ordered = by_execution(tmp_path, ["m.snapshot.5.pb", "m.snapshot.12.pb", "m.snapshot.77.pb"])
    assert ordered == ["m.snapshot.77.pb", "m.snapshot.12.pb", "m.snapshot.5.pb"]  # written first = run first
    assert [pick_execution(ordered, n, "m") for n in (None, 0, 1, -1)] == [
        ordered[0],
        ordered[0],
        ordered[1],
        ordered[2],
    ]
    assert pick_execution([], None, "m") is None
    with pytest.raises(UsageError, match="--snapshot 3: module 0001 m has snapshots of executions 0 to 2"):
        pick_execution(ordered, 3, "0001 m")
    with pytest.raises(UsageError, match="has no snapshot"):
        pick_execution([], 0, "0001 m")


def test_a_snapshot_is_told_from_a_module_proto_by_content_where_the_name_does_not_say(tmp_path):
    pytest.importorskip("google.protobuf")
    from xlatools.replay.hloproto import schema
    from xlatools.replay.sources import file_kind

    module = schema()["HloModuleProto"](name="m", computations=[b"opaque"])
    snapshot = schema()["HloSnapshot"]()
    snapshot.hlo.hlo_module = module.SerializeToString()
    (tmp_path / "renamed.pb").write_bytes(snapshot.SerializeToString())
    (tmp_path / "module.pb").write_bytes(module.SerializeToString())
    (tmp_path / "zeros.pb").symlink_to("/dev/zero")  # never read: not a regular file
    assert file_kind(tmp_path / "renamed.pb") == "snapshot"
    assert file_kind(tmp_path / "module.pb") == "proto"
    assert file_kind(tmp_path / "zeros.pb") == "proto"
