"""GPU paths with a mocked target (no GPU on the machines that run these tests)."""

from pathlib import Path

import pytest

from xlatools.run import flag_probe
from xlatools.run import target as targets
from xlatools.errors import EnvironmentMissing
from xlatools.run.plan import ProfileRun, RunRequest
from xlatools.run.program import Program
from xlatools.run.execute import prepare
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
    python="/py", jax="0.10.2", jaxlib="0.10.2", backend="cpu", devices=[{"id": 0, "platform": "cpu", "kind": "cpu"}]
)


@pytest.fixture
def fake_target(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(
        flag_probe,
        "unknown_flags",
        lambda target, flags, variable="XLA_FLAGS", **_: ([], {name: "table" for name in flags}),
    )
    monkeypatch.setattr(targets, "resolve_python", lambda spec: spec)  # the mocked interpreter has no file

    def use(target):
        monkeypatch.setattr(targets, "probe", lambda python, platform, frontend=None, **_: target)

    return use


def request(**kwargs):
    return RunRequest(Program("smoke", "dot,collectives"), "/py", **kwargs)


def test_gpu_platform_uses_the_gpu_and_no_fake_cpu_devices(fake_target):
    fake_target(GPU)
    plan = prepare(request(platform="gpu", dump=True), ProfileRun(), {}, {}, Path("/w")).plan
    env = plan.child_env({})
    assert env["JAX_PLATFORMS"] == "cuda,cpu"
    assert "xla_force_host_platform_device_count" not in env["XLA_FLAGS"]


def test_auto_platform_on_a_gpu_host_leaves_jax_to_choose(fake_target):
    fake_target(GPU)
    plan = prepare(request(platform="auto"), ProfileRun(), {}, {}, Path("/w")).plan
    chosen = prepare(request(platform="gpu"), ProfileRun(), {}, {}, Path("/w")).plan
    # expected: no platform pinned for auto, where a chosen platform on the same host pins one
    assert "JAX_PLATFORMS" not in plan.child_env({}) and chosen.child_env({})["JAX_PLATFORMS"] == "cuda,cpu"


def test_gpu_platform_without_gpu_is_environment_missing(fake_target):
    fake_target(CPU)
    with pytest.raises(EnvironmentMissing, match="sees no GPU"):
        prepare(request(platform="gpu"), ProfileRun(), {}, {}, Path("/w"))


def test_rocm_plugin_selects_rocm():
    assert ProbedInterpreter(python="/py", plugins=["jax-rocm60-plugin"]).gpu_platform() == "rocm"
    assert GPU.has_gpu and not CPU.has_gpu


def test_more_processes_than_gpus_is_refused_before_launch(fake_target):
    fake_target(GPU)  # one GPU
    from xlatools.errors import UsageError

    mp = RunRequest(Program("smoke", "multiprocess"), "/py", platform="gpu", processes=2)
    with pytest.raises(
        UsageError,
        match=r"--processes 2 x --devices-per-process 1 needs 2 GPUs; /py sees 1 "
        r"\(NVIDIA H100 80GB HBM3\)",
    ) as refused:
        prepare(mp, ProfileRun(), {}, {}, Path("/w"))
    assert refused.value.exit_code == 2 and "run one process" in refused.value.hint
    two = ProbedInterpreter(
        **{**GPU.__dict__, "devices": [{"id": i, "platform": "gpu", "kind": "NVIDIA H200"} for i in (0, 1)]}
    )
    fake_target(two)
    plan = prepare(mp, ProfileRun(), {}, {}, Path("/w")).plan
    assert [p.env["JAX_LOCAL_DEVICE_IDS"] for p in plan.processes] == ["0", "1"]
    narrowed = RunRequest(
        Program("smoke", "multiprocess"), "/py", platform="gpu", processes=2, env=["CUDA_VISIBLE_DEVICES=1"]
    )
    with pytest.raises(UsageError, match="CUDA_VISIBLE_DEVICES=1 leaves 1"):
        prepare(narrowed, ProfileRun(), {}, {}, Path("/w"))
    cpu = RunRequest(Program("smoke", "multiprocess"), "/py", platform="cpu", processes=4)
    assert len(prepare(cpu, ProfileRun(), {}, {}, Path("/w")).plan.processes) == 4  # CPU devices are made up


def test_auto_on_a_gpu_target_makes_up_no_cpu_devices(fake_target):
    fake_target(GPU)
    plan = prepare(request(platform="auto"), ProfileRun(), {}, {}, Path("/w")).plan
    assert "xla_force_host_platform_device_count" not in plan.child_env({}).get("XLA_FLAGS", "")
    fake_target(CPU)
    plan = prepare(request(platform="auto"), ProfileRun(), {}, {}, Path("/w")).plan
    assert "--xla_force_host_platform_device_count=4" in plan.child_env({})["XLA_FLAGS"]


def test_the_manifest_and_inspect_name_each_processs_gpu():
    from xlatools.records.run import Device, InterpreterFacts, ProcessRecord, RunManifest
    from xlatools.run.group_record import given_gpus
    from xlatools.run.process_dumps import DumpChoice, process_lines

    record = RunManifest(
        platform="gpu",
        jax=InterpreterFacts(
            devices=[Device(id=0, platform="gpu", kind="NVIDIA H200"), Device(id=1, platform="gpu", kind="NVIDIA H200")]
        ),
    )
    gpus = given_gpus(record, {"JAX_LOCAL_DEVICE_IDS": "1"})
    assert [(g.id, g.kind) for g in gpus] == [(1, "NVIDIA H200")]
    assert given_gpus(RunManifest(platform="cpu", jax=record.jax), {"JAX_LOCAL_DEVICE_IDS": "1"}) == []
    row = ProcessRecord(
        id=1, status="ok", devices=1, outcome="exit 0", stdout="p1.stdout.log", stderr="p1.stderr.log", gpus=gpus
    )
    [line] = process_lines([row], DumpChoice(Path("/b/xla_dump/p1"), Path("/b"), 1, 2))
    assert "1 device(s); GPU 1 NVIDIA H200; logs p1.stdout.log" in line
