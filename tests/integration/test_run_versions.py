"""Three real jaxlibs through --python: 0.4.30 (a second venv), this interpreter's (0.10.2 here)
and 0.12.x (a Python 3.12 venv).

CI creates the other two with scripts/make-old-jax-venv.sh and scripts/make-jax-venv.sh and sets
XLATOOLS_OLD_JAX_PYTHON / XLATOOLS_NEW_JAX_PYTHON with XLATOOLS_REQUIRE_OLD_JAX=1 / _NEW_JAX=1, so
these cannot pass by skipping there.
"""

from __future__ import annotations

import json
import os

import pytest
from packaging.version import Version

from tests.helpers import bundles, manifest
from xlatools.run.flags import KNOWN_FLAGS, table_verdict
from xlatools.run.presets.catalog import Catalog
from xlatools.run.flag_probe import unknown_flags
from xlatools.run.target import probe

JAXLIBS = ("old", "current", "new")


@pytest.fixture(params=JAXLIBS)
def any_jax_python(request) -> str:
    """Each jaxlib in turn: 0.4.30, this interpreter's, 0.12.x."""
    name = {"old": "old_jax_python", "current": "jax_python", "new": "new_jax_python"}[request.param]
    return request.getfixturevalue(name)


def test_default_dump_preset_on_old_jaxlib(xl, tmp_path, old_jax_python):
    result = xl("run", "--dump", "--python", old_jax_python)
    assert result.returncode == 0, result.stderr
    data = manifest(tmp_path / "artifacts" / "latest")
    assert data["jax"]["jaxlib"] == "0.4.30" and data["status"] == "ok"
    assert [r["ok"] for r in data["smoke"]["results"]] == [True] * 7
    assert data["dump"]["layout"] == "flat"
    ids = [m["id"] for m in data["dump"]["modules"]]
    assert ids == list(range(len(ids)))  # 0.4.30 numbers modules contiguously
    # each module's StableHLO: jax's (JAX_DUMP_IR_TO=<bundle>/jax_ir, set by the dumping run), tied to it
    tied = {m["name"]: m.get("stablehlo") or "" for m in data["dump"]["modules"]}
    assert all(f.startswith("../jax_ir/jax_ir") and f.endswith(f"_{name}_compile.mlir") for name, f in tied.items()), (
        tied
    )


def test_default_dump_preset_on_jaxlib_0_12(xl, tmp_path, new_jax_python):
    result = xl("run", "--dump", "--python", new_jax_python)
    assert result.returncode == 0, result.stderr
    data = manifest(tmp_path / "artifacts" / "latest")
    assert data["jax"]["jaxlib"].startswith("0.12.") and data["status"] == "ok"
    assert data["interpreter"]["python_version"].startswith("3.12.")
    assert [r["ok"] for r in data["smoke"]["results"]] == [True] * 7
    assert data["dump"]["layout"] == "per-module folders"
    modules = data["dump"]["modules"]
    assert modules and all(m["id"] % 2 == 0 for m in modules)  # even ids, as on 0.10.x
    assert all({"before_optimizations", "after_optimizations", "module_folder"} <= set(m["stages"]) for m in modules)
    assert all(m["instructions_before"] and m["instructions_after"] for m in modules)
    # each module's StableHLO is XLA's own module.mlir: the run leaves JAX_DUMP_IR_TO alone
    assert all(m["stablehlo"] == f"module_{m['id']:04d}.{m['name']}/module.mlir" for m in modules)
    assert not (tmp_path / "artifacts" / "latest" / "jax_ir").exists()
    inspected = xl("inspect", "artifacts/latest", "--json")
    assert inspected.returncode == 0, inspected.stderr
    assert {m["origin"] for m in json.loads(inspected.stdout)["modules"]} == {"jax"}


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


def test_every_shipped_preset_runs(xl, tmp_path, monkeypatch, probe_cache, any_jax_python):
    """All shipped presets the jaxlib's version admits, in one real run: no flag aborts XLA.

    Presets whose range excludes the jaxlib are refused before launch (exit 2), never at start-up."""
    monkeypatch.setenv("XLATOOLS_CACHE_DIR", str(probe_cache))
    target = probe(any_jax_python, "cpu")
    shipped = [p for p in Catalog.load().by_kind() if "/run/presets/" in p.source]
    admitted, refused = [], []
    for preset in shipped:
        low, high = preset.jaxlib_range()
        fits = (low is None or Version(target.jaxlib) >= Version(low)) and (
            high is None or Version(target.jaxlib) <= Version(high)
        )
        (admitted if fits else refused).append(f"{preset.kind}:{preset.name}")
    args = [arg for ref in admitted for arg in ("--preset", ref)]
    # --frontend jax: the frontend presets (tf-clustering, torch-xla) would otherwise ask for their own frontend;
    # here they only set variables jax ignores.
    result = xl("run", "smoke:dot", "--python", any_jax_python, "--frontend", "jax", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    data = manifest(tmp_path / "artifacts" / "latest")
    assert data["status"] == "ok" and data["smoke"]["results"][0]["ok"]
    assert len(data["presets"]) == len(admitted)
    assert data["dump"]["modules"] and (tmp_path / "artifacts" / "latest" / "jax_ir").is_dir()
    for ref in refused:
        result = xl("run", "smoke:dot", "--python", any_jax_python, "--preset", ref, "--dry-run")
        assert result.returncode == 2 and ("needs jaxlib" in result.stderr or "does not know" in result.stderr), (
            result.stderr
        )
    assert refused == ([] if Version(target.jaxlib) >= Version("0.10.2") else ["dump:llvm"])


@pytest.mark.parametrize("which, version", [("old", "0.4.30"), ("new", "0.12.")])
def test_lower_on_other_jaxlibs(xl, tmp_path, request, which, version):
    python = request.getfixturevalue(f"{which}_jax_python")
    (tmp_path / "model.py").write_text(
        "import jax.numpy as jnp\ndef f(x, y, alpha):\n    return alpha * jnp.dot(x, y)\n"
    )
    result = xl(
        "lower",
        "model.py:f",
        "--input-shapes",
        '[("x", "f32[2,4,3]"), ("y", "f32[3,2]")]',
        "--constants",
        '{"alpha": 2.0}',
        "--python",
        python,
        "--json",
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["jax"].startswith(version) and answer["cost_analysis"]["flops"] > 0
    assert "HloModule jit_f" in answer["ir_text"]


def test_flag_table_matches_every_jaxlib(tmp_path, monkeypatch, any_jax_python):
    """Every table entry that decides for this version agrees with what the jaxlib itself says."""
    monkeypatch.setenv("XLATOOLS_CACHE_DIR", str(tmp_path))
    values = {
        "xla_dump_to": str(tmp_path / "d"),
        "xla_gpu_dump_autotune_results_to": str(tmp_path / "a"),
        "xla_force_host_platform_device_count": "2",
        "xla_cpu_max_isa": "AVX2",
        "xla_backend_optimization_level": "1",
        "xla_dump_max_hlo_modules": "5",
        "xla_gpu_autotune_level": "4",
        "xla_enable_hlo_passes_only": "",
        "xla_disable_hlo_passes": "x",
        "xla_dump_hlo_pass_re": ".*",
        "xla_dump_hlo_pipeline_re": ".*",
        "xla_dump_hlo_module_re": ".*",
        "xla_dump_emitter_re": ".*",
    }  # string flags need a value
    target = probe(any_jax_python, "cpu")
    flags = {name: f"--{name}" + (f"={values[name]}" if name in values else "") for name in KNOWN_FLAGS}
    monkeypatch.setattr("xlatools.run.flag_probe.table_verdict", lambda name, version: None)  # force probing
    refused, how = unknown_flags(target, flags)
    monkeypatch.undo()
    assert set(how.values()) == {"probe"}
    decided = 0
    for name in KNOWN_FLAGS:
        verdict = table_verdict(name, target.jaxlib)
        if verdict is not None:
            decided += 1
            assert verdict == (name not in refused), (target.jaxlib, name)
    assert decided == len(KNOWN_FLAGS)  # every measured release is decided by the table alone
    assert os.path.exists(tmp_path / "targets")  # the answers were cached
