"""`diff` and `report` below the HLO on real programs and a real jaxlib (the corpus venv's jax 0.10.2):
a flax + optax training step with XLA:CPU fast math off and on (the HLO of every module is the same; the
LLVM IR and the outputs are not), and the real temp-memory growth of jaxlib 0.10.2 shown by a flag pair on
one jaxlib (`--xla_cpu_experimental_ynn_fusion_type=-reduce` recovers it: FIELD_NOTES §11)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import interpreter_from_env, run_cli

ROOT = Path(__file__).resolve().parents[2]
FLAX = ROOT / "tests" / "corpus" / "flax_linen_optax.py"
VANDER = ROOT / "tests" / "fixtures" / "perf" / "vander_temp.py"


@pytest.fixture(scope="module")
def python() -> str:
    return interpreter_from_env(
        "XLATOOLS_CORPUS_0_10_2_PYTHON",
        "corpus",
        "a Python with jax 0.10.2 and the corpus libraries",
        "scripts/make-corpus-venv.sh PATH 0.10.2",
    )


def _pair(work: Path, program: Path, python: str, cache: Path, sides: dict[str, list[str]]) -> dict[str, str]:
    """One run per side (in parallel: the machine has two cores), each a bundle; {side: bundle}."""
    env = {"XLATOOLS_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"}

    def run(side: str) -> str:
        args = ["run", str(program), "--python", python, "--dump", "--out", str(work / side), "--json"]
        done = run_cli(*args, *sides[side], cwd=work, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)["bundle"]

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(sides, pool.map(run, sides)))


def test_fast_math_on_a_flax_step_differs_only_in_emitted_code_and_outputs(python, probe_cache, tmp_path):
    runs = _pair(
        tmp_path,
        FLAX,
        python,
        probe_cache,
        {
            side: ["--preset", "snapshots", f"--xla-flag=--xla_cpu_enable_fast_math={value}"]
            for side, value in (("off", "false"), ("on", "true"))
        },
    )
    done = run_cli("diff", runs["off"], runs["on"], "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert all(m["optimised"] == "same" for m in data["modules"]) and not data["modules_differ"]
    step = next(m for m in data["modules"] if m["a"]["name"] == "jit_train_step")
    code = step["emitted"]
    assert code["counts"]["differs"] > 0 and code["kinds"]["LLVM IR"] > 0
    assert code["flags_b"]["reassoc"] > code["flags_a"].get("reassoc", 0)  # fast-math flags in B's code
    assert "metadata (node numbers and attachments)" in code["normalised"]
    assert step["outputs"]["executions"][0]["same_outputs"] is False
    headline = data["differs_in"]["headline"]
    assert "is the same: A and B differ only in the emitted code" in headline and "with the same arguments" in headline
    layers = {layer["name"]: layer for layer in data["differs_in"]["layers"]}
    assert "0050 jit_train_step" in layers["emitted code"]["differ"] and layers["optimised HLO"]["differ"] == []
    text = run_cli("diff", runs["off"], runs["on"], "--module", "jit_train_step", cwd=tmp_path)
    assert "where A and B differ: the optimised HLO of the 1 module is the same: A and B differ only" in text.stdout
    assert "reassoc nsz contract" in text.stdout
    page = tmp_path / "report.html"
    assert run_cli("report", runs["off"], runs["on"], "-o", str(page), cwd=tmp_path).returncode == 0
    html = page.read_text()
    assert 'id="where"' in html and "Emitted code:" in html and "Recorded outputs (snapshots" in html


def test_temp_memory_growth_names_the_grown_buffer_and_its_line(python, probe_cache, tmp_path):
    flag = "--xla-flag=--xla_cpu_experimental_ynn_fusion_type=-reduce"
    runs = _pair(tmp_path, VANDER, python, probe_cache, {"fixed": [flag], "grown": []})
    done = run_cli("diff", runs["fixed"], runs["grown"], "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)["metrics"]
    top = metrics["modules"][0]  # largest change first
    temp = next(m for m in top["metrics"] if m["metric"] == "temp_bytes")
    assert top["name"] == "jit_power_sum" and (temp["a"], temp["b"]) == (4456448, 75759616) and temp["ratio"] == 17.0
    grown = metrics["grown"][0]
    biggest = grown["buffers_b"][0]
    assert grown["name"] == "jit_power_sum" and biggest["value"] == "multiply_real_fusion"
    assert (biggest["size"], biggest["shape"], biggest["source"]) == (
        71303168,
        "f64[64,256,32,17]",
        "vander_temp.py:21",
    )
    text = run_cli("diff", runs["fixed"], runs["grown"], cwd=tmp_path).stdout
    assert "memory grew in jit_power_sum: 4.7 MB -> 76.0 MB" in text and "4.5 MB -> 75.8 MB (17x)" in text
    page = tmp_path / "report.html"
    assert run_cli("report", runs["fixed"], runs["grown"], "-o", str(page), cwd=tmp_path).returncode == 0
    html = page.read_text()
    assert 'data-check="metrics-chart"' in html and 'data-check="grown-buffers"' in html and "vander_temp.py:21" in html
