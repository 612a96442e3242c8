"""What every run measures, on real programs and real jaxlibs (0.4.26, 0.4.30, this interpreter's, 0.12):
compile times, memory analyses equal to jax's own, synchronised call times attributed to the right module,
peak RSS; the switches that change it; inspect's table. No timing is asserted: only that the numbers
exist, are positive, belong where they should and equal what jax reports."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import bundles, interpreter_from_env, manifest
from xlatools.run.metrics import metric_samples
from xlatools.run.observer import read_statuses

PERF = Path(__file__).resolve().parents[1] / "fixtures" / "perf"


@pytest.fixture(params=["old", "current", "new"])
def any_jax_python(request) -> str:
    """Each cached jaxlib in turn: 0.4.30, this interpreter's, 0.12.x."""
    return request.getfixturevalue(
        {"old": "old_jax_python", "current": "jax_python", "new": "new_jax_python"}[request.param]
    )


def _only(modules: list[dict], name: str) -> dict:
    found = [m for m in modules if m["name"] == name]
    assert len(found) == 1, [m["name"] for m in modules]
    return found[0]


def test_every_call_of_a_slow_scan_is_timed_on_each_jaxlib(xl, tmp_path, any_jax_python):
    """jax-ml/jax#36799's program, 12 calls: each one synchronised and timed (jax's fast path held back)."""
    shutil.copy(PERF / "scan_f64_carry.py", tmp_path)
    result = xl("run", "scan_f64_carry.py", "--python", any_jax_python, "--quiet")
    assert result.returncode == 0, result.stderr
    bundle = tmp_path / "artifacts" / "latest"
    data = manifest(bundle)
    metrics = data["metrics"]
    assert metrics["measure_calls"] == 20 and metrics["synchronised"] and not metrics["notes"]
    [process] = metrics["processes"]
    assert process["exited"] and process["peak_rss_mb"] > 50 and process["cpu_s"] > 0
    assert process["jax"] == data["jax"]["jax"]
    scan = _only(metrics["modules"], "jit_filter_step")
    assert scan["compile_s"] > 0 and scan["backend_compile_s"] > 0 and scan["cache_hit"] is False
    assert scan["memory"]["argument_bytes"] == 2000 * 3 * 3 * 8  # its float64 argument, exactly
    assert scan["platform"] == "cpu" and scan["devices"] == 1
    calls = scan["calls"]
    assert (calls["timed"], calls["warmup"], calls["untimed"], len(calls["wall_s"])) == (12, 1, 0, 12)
    assert all(t > 0 for t in calls["wall_s"]) and all(t >= 0 for t in calls["cpu_s"])
    run_s = metric_samples(bundle, "run_s:filter_step")
    assert len(run_s.samples()) == 11 and run_s.value > 0 and run_s.groups[0].excluded == calls["wall_s"][:1]
    assert metric_samples(bundle, "peak_rss_mb").value == process["peak_rss_mb"]


ANALYSE = (
    "import vander_temp as v; f, a = v.inputs(); print(f.lower(*a).compile().memory_analysis().temp_size_in_bytes)"
)


def test_temp_bytes_is_memory_analysis_and_the_hooks_chain(xl, tmp_path, jax_python):
    """jaxlib 0.10.2's temp growth program with the dump, the argument recorder and 2 timed calls of 3."""
    shutil.copy(PERF / "vander_temp.py", tmp_path)
    result = xl("run", "vander_temp.py", "--dump", "--record-inputs", "--measure-calls", "2", "--quiet")
    assert result.returncode == 0, result.stderr
    bundle = bundles(tmp_path / "artifacts")[0]
    data = manifest(bundle)
    module = _only(data["metrics"]["modules"], "jit_power_sum")
    expected = subprocess.run(
        [jax_python, "-c", ANALYSE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert expected.returncode == 0, expected.stderr
    assert module["memory"]["temp_bytes"] == json.loads(expected.stdout) > 1_000_000
    assert metric_samples(bundle, "temp_bytes:power_sum").value == module["memory"]["temp_bytes"]
    assert module["flops"] > 0 and module["calls"]["timed"] == 2  # the third call took jax's fast path
    dumped = [m["id"] for m in data["dump"]["modules"] if m["name"] == "jit_power_sum"]
    assert module["dump_id"] == dumped[0]
    assert list((bundle / "recorded").glob("module_*.jit_power_sum.snapshot.*.pb"))  # the recorder ran too
    shown = xl("inspect", str(bundle))
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if " jit_power_sum " in line)
    assert f"({module['dump_id']:04d})" in row and " MB " in row
    assert "peak RSS" in shown.stdout and "the first 2 call(s)" in shown.stdout
    as_json = json.loads(xl("inspect", str(bundle), "--json").stdout)
    assert as_json["run"]["metrics"]["modules"] == data["metrics"]["modules"]


EXITS_EARLY = """import os
import jax, jax.numpy as jnp
print(jax.jit(lambda x: x + 1)(jnp.ones(3)))
os._exit(0)
"""


def test_no_timed_calls_no_metrics_and_an_early_exit(xl, tmp_path):
    (tmp_path / "early.py").write_text(EXITS_EARLY)
    assert xl("run", "early.py", "--measure-calls", "0", "--name", "zero").returncode == 0
    assert xl("run", "early.py", "--no-metrics", "--name", "off").returncode == 0
    zero, off = (next(b for b in bundles(tmp_path / "artifacts") if f"-{name}-" in b.name) for name in ("zero", "off"))
    metrics = manifest(zero)["metrics"]
    assert not metrics["synchronised"] and "asynchronously" in metrics["mode"]
    [process] = metrics["processes"]
    assert not process["exited"] and process["peak_rss_mb"] > 0  # os._exit: the last compile's numbers
    assert all(m["calls"] is None for m in metrics["modules"]) and metrics["modules"]
    assert "--measure-calls 0" in metric_samples(zero, "run_s").missing
    [status] = read_statuses(zero)  # what a capture of a stuck process reads: the last compile and call it saw
    assert status.state == "python" and status.last_compiled.name.startswith("jit_")
    assert status.last_executed.name == status.last_compiled.name
    assert "metrics" not in manifest(off) and not (off / "observer").exists()


def test_jax_0_4_26_times_the_first_call_only(xl, tmp_path):
    python = interpreter_from_env(
        "XLATOOLS_ONEDNN_JAX_PYTHON",
        "onednn_jax",
        "a Python with jax/jaxlib 0.4.26",
        "scripts/make-jax-venv.sh PATH 0.4.26",
    )
    shutil.copy(PERF / "scan_f64_carry.py", tmp_path)
    result = xl("run", "scan_f64_carry.py", "--python", python, "--quiet", "--", "3")
    assert result.returncode == 0, result.stderr
    metrics = manifest(tmp_path / "artifacts" / "latest")["metrics"]
    assert _only(metrics["modules"], "jit_filter_step")["calls"]["timed"] == 1
    assert any("only the first call" in note for note in metrics["notes"])


def test_replay_times_each_interpreter_and_names_the_slower(xl, tmp_path, old_jax_python):
    """The scan of jax-ml/jax#36799 dumped by this jaxlib, replayed here and on 0.4.30 (--reference-python)."""
    shutil.copy(PERF / "scan_f64_carry.py", tmp_path)
    assert xl("run", "scan_f64_carry.py", "--dump", "--quiet", "--", "2").returncode == 0
    result = xl(
        "replay",
        "artifacts/latest",
        "--module",
        "jit_filter_step",
        "--reference-python",
        old_jax_python,
        "--iterations",
        "5",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    [module] = json.loads(result.stdout)["modules"]
    speed = module["speed"]
    assert [(s["label"], s["count"]) for s in speed["runs"]] == [("test", 5), (module["runs"][1]["label"], 5)]
    assert speed["runs"][1]["jaxlib"] == "0.4.30" and all(s["min_s"] > 0 for s in speed["runs"])
    assert {speed["slowest"], speed["fastest"]} == {"test", speed["runs"][1]["label"]} and speed["ratio"] >= 1
    assert speed["slower"] in (None, speed["slowest"])
