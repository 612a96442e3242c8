"""GPU paths with a mocked target (no GPU on the machines that run these tests)."""

from pathlib import Path

import pytest

from xlatools.run import flag_probe
from xlatools.run import target as targets
from xlatools.errors import EnvironmentMissing
from xlatools.run.plan import ProfileRun, RunRequest
from xlatools.run.program import Program
from xlatools.run.execute import prepare
from xlatools.run.target import Target

GPU = Target(python="/py", jax="0.10.2", jaxlib="0.10.2", backend="gpu", plugins=["jax-cuda12-plugin"],
             devices=[{"id": 0, "platform": "gpu", "kind": "NVIDIA H100 80GB HBM3"}])
CPU = Target(python="/py", jax="0.10.2", jaxlib="0.10.2", backend="cpu", devices=[{"id": 0, "platform": "cpu", "kind": "cpu"}])


@pytest.fixture
def fake_target(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(flag_probe, "unknown_flags", lambda target, flags, variable="XLA_FLAGS", **_: ([], {name: "table" for name in flags}))
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
    assert env["JAX_PLATFORMS"] == "cuda"
    assert "xla_force_host_platform_device_count" not in env["XLA_FLAGS"]


def test_auto_platform_on_a_gpu_host_leaves_jax_to_choose(fake_target):
    fake_target(GPU)
    plan = prepare(request(platform="auto"), ProfileRun(), {}, {}, Path("/w")).plan
    chosen = prepare(request(platform="gpu"), ProfileRun(), {}, {}, Path("/w")).plan
    # expected: no platform pinned for auto, where a chosen platform on the same host pins one
    assert "JAX_PLATFORMS" not in plan.child_env({}) and chosen.child_env({})["JAX_PLATFORMS"] == "cuda"


def test_gpu_platform_without_gpu_is_environment_missing(fake_target):
    fake_target(CPU)
    with pytest.raises(EnvironmentMissing, match="sees no GPU"):
        prepare(request(platform="gpu"), ProfileRun(), {}, {}, Path("/w"))


def test_rocm_plugin_selects_rocm():
    assert Target(python="/py", plugins=["jax-rocm60-plugin"]).gpu_platform() == "rocm"
    assert GPU.has_gpu and not CPU.has_gpu
