"""Two real jaxlibs through --python: the newest here (0.10.2, this interpreter) and 0.4.30 (a second venv).

CI creates the second one with scripts/make-old-jax-venv.sh and sets XLATOOLS_OLD_JAX_PYTHON and
XLATOOLS_REQUIRE_OLD_JAX=1, so these cannot pass by skipping there.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers import bundles, manifest
from xlatools.run.target import probe, unknown_flags
from xlatools.run.flags import KNOWN_FLAGS, table_verdict


def test_default_dump_preset_on_old_jaxlib(xl, tmp_path, old_jax_python):
    result = xl("run", "--dump", "--python", old_jax_python)
    assert result.returncode == 0, result.stderr
    data = manifest(tmp_path / "artifacts" / "latest")
    assert data["jax"]["jaxlib"] == "0.4.30" and data["status"] == "ok"
    assert [r["ok"] for r in data["smoke"]["results"]] == [True] * 7
    assert data["dump"]["layout"] == "flat"
    ids = [m["id"] for m in data["dump"]["modules"]]
    assert ids == list(range(len(ids)))  # 0.4.30 numbers modules contiguously


def test_new_layout_on_newest_jaxlib(xl, tmp_path):
    result = xl("run", "smoke:dot,matmul", "--dump")
    assert result.returncode == 0, result.stderr
    data = manifest(tmp_path / "artifacts" / "latest")
    if data["jax"]["jaxlib"].startswith("0.4."):
        pytest.skip("this interpreter holds an old jaxlib")
    assert data["dump"]["layout"] == "per-module folders"
    assert all(m["id"] % 2 == 0 for m in data["dump"]["modules"])  # even ids


@pytest.mark.parametrize("args", [["--xla-flag=--xla_dump_emitter_re=.*"], ["--preset", "llvm"]])
def test_newer_only_flag_refused_on_old_jaxlib(xl, tmp_path, old_jax_python, args):
    result = xl("run", "--python", old_jax_python, *args)
    assert result.returncode == 2, result.stderr
    assert "jaxlib 0.4.30" in result.stderr and "--xla_dump_emitter_re=.*" in result.stderr
    assert "Traceback" not in result.stderr
    assert not bundles(tmp_path / "artifacts")


def test_lower_on_old_jaxlib(xl, tmp_path, old_jax_python):
    (tmp_path / "model.py").write_text("import jax.numpy as jnp\ndef f(x, y, alpha):\n    return alpha * jnp.dot(x, y)\n")
    result = xl("lower", "model.py:f", "--input-shapes", '[("x", "f32[2,4,3]"), ("y", "f32[3,2]")]',
                "--constants", '{"alpha": 2.0}', "--python", old_jax_python, "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["jax"] == "0.4.30" and answer["cost_analysis"]["flops"] > 0
    assert "HloModule jit_f" in answer["ir_text"]


def test_flag_table_matches_both_jaxlibs(tmp_path, monkeypatch, jax_python, old_jax_python):
    """Every table entry that decides for these versions agrees with what the jaxlib itself says."""
    monkeypatch.setenv("XLATOOLS_CACHE_DIR", str(tmp_path))
    values = {"xla_dump_to": str(tmp_path / "d"), "xla_gpu_dump_autotune_results_to": str(tmp_path / "a"),
              "xla_force_host_platform_device_count": "2", "xla_cpu_max_isa": "AVX2", "xla_backend_optimization_level": "1",
              "xla_dump_max_hlo_modules": "5", "xla_gpu_autotune_level": "4", "xla_enable_hlo_passes_only": "",
              "xla_disable_hlo_passes": "x", "xla_dump_hlo_pass_re": ".*", "xla_dump_hlo_pipeline_re": ".*",
              "xla_dump_hlo_module_re": ".*", "xla_dump_emitter_re": ".*"}  # string flags need a value
    for python in (jax_python, old_jax_python):
        target = probe(python, "cpu")
        flags = {name: f"--{name}" + (f"={values[name]}" if name in values else "") for name in KNOWN_FLAGS}
        monkeypatch.setattr("xlatools.run.target.table_verdict", lambda name, version: None)  # force probing
        refused, how = unknown_flags(target, flags)
        monkeypatch.undo()
        monkeypatch.setenv("XLATOOLS_CACHE_DIR", str(tmp_path))
        assert set(how.values()) == {"probe"}
        for name in KNOWN_FLAGS:
            verdict = table_verdict(name, target.jaxlib)
            if verdict is not None:
                assert verdict == (name not in refused), (target.jaxlib, name)
        assert os.path.exists(tmp_path / "targets")  # the answers were cached
