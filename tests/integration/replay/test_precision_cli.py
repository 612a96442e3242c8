"""`replay --precision` through the CLI on real modules: the H200 flax dump (text of jaxlib 0.11.2, parsed by
jaxlib 0.12), the TF32 stand-in for a GPU (tests/standin/tf32.py: the CPU has no TF32, so the `precision` verdict
needs it), and jaxlib 0.6.2's real float64 miscompile, which must stay a mismatch at full precision.

Cost: each target process of jaxlib 0.12 starts in 3-7 s here; jit_step compiles in 2-4 s. About 2.5 minutes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import REPO, bundles, interpreter_from_env, manifest, require, run_cli
from tests.standin.tf32 import interpreter as standin_interpreter

FLAX = REPO.parent / "shared" / "fixtures" / "gpu-h200" / "flax-cnn"


@pytest.fixture(scope="module")
def new_python() -> str:
    require("gpu_fixtures", (FLAX / "manifest.json").is_file(), f"{FLAX} (the H200 fixtures in ../shared)")
    return interpreter_from_env(
        "XLATOOLS_NEW_JAX_PYTHON",
        "new_jax",
        "a Python with jax/jaxlib 0.12 (parses 0.11.2 text)",
        "scripts/make-jax-venv.sh PATH 0.12",
    )


@pytest.fixture(scope="module")
def standin(new_python, tmp_path_factory) -> str:
    """jaxlib 0.12 with f32 dot/convolution operands rounded to TF32: a stand-in for the H200, not a GPU."""
    return standin_interpreter(new_python, tmp_path_factory.mktemp("tf32-standin"))


def _module(result) -> dict:
    return json.loads(result.stdout)["modules"][0]


def test_flax_step_at_full_precision_names_what_was_raised(replay, new_python, tmp_path):
    result = replay(
        "replay",
        str(FLAX),
        "--module",
        "jit_step",
        "--python",
        new_python,
        "--platform",
        "cpu",
        "--reference",
        "cpu",
        "--precision",
        "highest",
        "--out",
        "out",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    said = result.stderr  # the progress, the table and the note
    assert "11 instruction(s) raised to full precision" in said
    assert "conv_general_dilated.5" in said and "dot_general.8" in said
    module = manifest(bundles(tmp_path / "out")[0])["modules"][0]
    check = module["precision"]
    assert check["mode"] == "highest" and len(check["raised"]) == 11 and check["verdict"] is None
    raised = Path(check["module"]).read_text()
    assert raised.count("operand_precision={highest,highest}") == 11
    test = next(r for r in module["runs"] if r["label"] == "test")
    assert test["loaded_from"]["path"] == check["module"]  # the test ran the raised text ...
    reference = next(r for r in module["runs"] if r["label"] == "reference-cpu")
    assert reference["loaded_from"]["path"] != check["module"]  # ... the reference never does


def test_standin_tf32_differences_are_precision_not_a_miscompile(replay, new_python, standin, tmp_path):
    result = replay(
        "replay",
        str(FLAX),
        "--module",
        "jit_step",
        "--module",
        "40360",
        "--python",
        standin,
        "--platform",
        "cpu",
        "--reference-python",
        new_python,
        "--out",
        "out",
        "--json",
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    modules = {m["name"]: m for m in json.loads(result.stdout)["modules"]}
    assert set(modules) == {"jit_step", "jit_conv_general_dilated"}
    for name, raised in (("jit_step", 11), ("jit_conv_general_dilated", 1)):
        module = modules[name]
        check = module["precision"]
        assert module["outcome"] == "precision" and check["verdict"] == "precision", check
        assert len(check["raised"]) == raised and check["atol"] == 1e-3
        assert not check["as_compiled"][0]["ok"] and check["as_compiled"][0]["max_abs_error"] > 1e-3
        assert all(c["ok"] for c in check["highest"])
        test = next(r for r in module["runs"] if r["label"] == "test")
        assert "stand-in for a GPU" in test["loaded_from"]["how"]
    bundle = bundles(tmp_path / "out")[0]
    summary = (bundle / "summary.txt").read_text()
    assert "status: ok (exit 0)" in summary and "at full precision" in summary and "as compiled" in summary

    # The single comparison of old: the stand-in's TF32 is a mismatch as compiled (exit 1), named as such.
    strict = replay(
        "replay",
        str(FLAX),
        "--module",
        "40360",
        "--python",
        standin,
        "--platform",
        "cpu",
        "--reference-python",
        new_python,
        "--precision",
        "as-compiled",
        "--out",
        "strict",
        "--json",
    )
    assert strict.returncode == 1, strict.stdout + strict.stderr
    module = _module(strict)
    assert module["outcome"] == "mismatch" and "precision" not in module


def test_standin_pack_and_reduce_keep_the_rule(replay, new_python, standin, tmp_path):
    packed = replay(
        "repro",
        "pack",
        str(FLAX),
        "--module",
        "40360",
        "--python",
        standin,
        "--platform",
        "cpu",
        "--reference-python",
        new_python,
        "-o",
        "conv.tar.gz",
        "--out",
        "out",
        "--json",
    )
    assert packed.returncode == 0, packed.stdout + packed.stderr
    (expected,) = json.loads(packed.stdout)["expected"].items()  # what it was judged against, the reference's jaxlib
    assert expected[0] == "40360 jit_conv_general_dilated", expected
    assert expected[1].startswith("precision against reference-jax-0.12"), expected
    again = replay(
        "repro", "run", "conv.tar.gz", "--python", standin, "--reference-python", new_python, "--out", "run", "--json"
    )
    # `precision` is no failure: the pack has nothing to reproduce (exit 5), and the replay here gave the same outcome
    answer = json.loads(again.stdout)
    assert again.returncode == 5 and answer["outcome"] == "nothing-to-reproduce", again.stdout + again.stderr
    assert answer["differences"] == [] and "the same outcome" in answer["reason"]
    # reduce: a difference that is only precision is not interesting (so nothing is reduced) unless asked.
    reduced = replay(
        "reduce",
        str(FLAX),
        "--module",
        "40360",
        "--python",
        standin,
        "--platform",
        "cpu",
        "--reference-python",
        new_python,
        "--out",
        "reduce",
    )
    assert reduced.returncode == 2, reduced.stdout + reduced.stderr
    assert "precision only" in reduced.stderr + reduced.stdout


MISCOMPILE_WITH_A_DOT = """
import jax
import jax.numpy as jnp
import jax.scipy.stats as st
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def summary(x, w):
    z = (x - jnp.mean(x)) / jnp.std(x)
    return st.t.pdf(z, -1.0), jnp.dot(w, w.T)  # jaxlib 0.6.2: finite garbage where NaN is right (jax-ml/jax#29537)


print(summary(np.linspace(-2.0, 3.0, 8), np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)))
"""


def test_a_real_miscompile_stays_a_mismatch_at_full_precision(replay, tmp_path, replay_env):
    import sys

    old = interpreter_from_env(
        "XLATOOLS_MISCOMPILE_JAX_PYTHON",
        "miscompile_jax",
        "a Python with jax/jaxlib 0.6.2 (its CPU exp of a constant NaN is wrong, jax-ml/jax#29537)",
        "scripts/make-jax-venv.sh PATH 0.6.2",
    )
    (tmp_path / "prog.py").write_text(MISCOMPILE_WITH_A_DOT)
    ran = run_cli(
        "run",
        "prog.py",
        "--python",
        old,
        "--preset",
        "dump:hlo",
        "--out",
        "runs",
        cwd=tmp_path,
        env=replay_env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    result = replay(
        "replay",
        str(bundles(tmp_path / "runs")[0]),
        "--module",
        "jit_summary",
        "--python",
        old,
        "--reference-python",
        sys.executable,
        "--out",
        "out",
        "--json",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    module = _module(result)
    check = module["precision"]
    assert module["outcome"] == "mismatch" and check["verdict"] == "mismatch"
    assert [r["opcode"] for r in check["raised"]] == ["dot"]
    assert not check["highest"][0]["ok"] and "still differs at full precision" in check["note"]
