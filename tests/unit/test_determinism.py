"""The deterministic mode on a GPU replay (a mocked GPU target: no GPU on the machines that run these tests)."""

from pathlib import Path

import pytest

from xlatools.records.replay import PackedOptions, ReplayRequest
from xlatools.replay.execute import prepare
from xlatools.run import flag_probe
from xlatools.run import target as targets
from xlatools.run.determinism import CANDIDATES, MODE, SOURCE
from xlatools.run.target import ProbedInterpreter

GPU = ProbedInterpreter(
    python="/py",
    jax="0.11.2",
    jaxlib="0.11.2",
    backend="gpu",
    plugins=["jax-cuda13-plugin"],
    devices=[{"id": 0, "platform": "gpu", "kind": "NVIDIA H200"}],
)
MODULE = "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] add(p, p)\n}\n"


@pytest.fixture
def gpu(monkeypatch, tmp_path):
    unknown = []
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(
        flag_probe,
        "unknown_flags",
        lambda target, flags, variable="XLA_FLAGS", **_: (
            [name for name in flags if name in unknown],
            {name: "table" for name in flags},
        ),
    )
    monkeypatch.setattr(targets, "probe", lambda python, platform, frontend=None, **_: GPU)
    (tmp_path / "m.hlo").write_text(MODULE)
    return tmp_path / "m.hlo", unknown


def runs(source: Path, **options) -> dict:
    prepared = prepare(ReplayRequest(source=source, python="/py", references=["cpu"], **options))
    return {run.label: run for run in prepared.plan.runs}, prepared.plan.notes


def test_gpu_test_run_gets_the_mode_and_the_cpu_reference_does_not(gpu):
    source, _ = gpu
    found, notes = runs(source, platform="gpu")
    assert set(CANDIDATES[MODE]) <= set(found["test"].xla_flags)
    assert all(found["test"].flag_sources[flag] == SOURCE for flag in CANDIDATES[MODE])
    assert not set(CANDIDATES[MODE]) & set(found["reference-cpu"].xla_flags)
    assert any(note.startswith("deterministic mode (") for note in notes)


def test_nondeterministic_and_the_users_own_flag_win(gpu):
    source, _ = gpu
    found, _ = runs(source, platform="gpu", deterministic=False)
    assert not set(CANDIDATES[MODE]) & set(found["test"].xla_flags)
    found, _ = runs(source, platform="gpu", xla_flags=["--xla_gpu_autotune_level=4"])
    assert [f for f in found["test"].xla_flags if "autotune_level" in f] == ["--xla_gpu_autotune_level=4"]


def test_a_flag_this_jaxlib_lacks_is_left_out_with_a_note(gpu):
    source, unknown = gpu
    unknown.append("xla_gpu_deterministic_ops")
    found, notes = runs(source, platform="gpu")
    assert "--xla_gpu_deterministic_ops=true" not in found["test"].xla_flags
    assert any("does not know --xla_gpu_deterministic_ops=true" in note for note in notes)


def test_packs_record_the_mode():
    """On unless turned off (None: the default, left out of old records); a pack carries --nondeterministic."""
    assert PackedOptions().deterministic is None and ReplayRequest(source=Path("x"), python="p").deterministic is None
    assert "deterministic" in {f for f in PackedOptions.__dataclass_fields__}
