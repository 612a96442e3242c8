"""`xlatools lower` with real jax on CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MODEL = "import jax.numpy as jnp\n\ndef f(x, y, z, alpha, beta):\n    return alpha * jnp.dot(x, y) + beta * z\n"
SHAPES = '[("x", "f32[2,4,3]"), ("y", "f32[3,2]"), ("z", "f32[2]")]'
CONSTANTS = '{"alpha": 2.0, "beta": 3.0}'


@pytest.fixture
def model(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    return "model.py:f"


def test_hlo_text_and_proto(xl, tmp_path, model):
    result = xl(
        "lower",
        model,
        "--input-shapes",
        SHAPES,
        "--constants",
        CONSTANTS,
        "--ir-human-dest",
        "f.txt",
        "--ir-dest",
        "f.pb",
    )
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "f.txt").read_text()
    assert text.startswith("HloModule jit_f") and "dot(" in text
    assert (tmp_path / "f.pb").stat().st_size > 100
    assert "cost analysis: flops" in result.stderr


def test_optimized_stablehlo_and_jaxpr(xl, tmp_path, model):
    optimized = xl("lower", model, "--input-shapes", SHAPES, "--constants", CONSTANTS, "--optimized", "--json")
    assert optimized.returncode == 0, optimized.stderr
    answer = json.loads(optimized.stdout)
    assert "fusion" in answer["ir_text"] and answer["memory_analysis"]["output_size_in_bytes"] == 64
    stablehlo = xl("lower", model, "--input-shapes", SHAPES, "--constants", CONSTANTS, "--ir-format", "stablehlo")
    assert "stablehlo.dot_general" in stablehlo.stdout
    jaxpr = xl("lower", model, "--input-shapes", SHAPES, "--constants", CONSTANTS, "--ir-format", "jaxpr")
    assert "dot_general" in jaxpr.stdout and "lambda" in jaxpr.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["--input-shapes", '[("x", "f32[2,4")]'], "--input-shapes item 0 ('x'): 'f32[2,4' is not a shape"),
        (["--input-shapes", SHAPES, "--constants", "{alpha: 2}"], "--constants: '{alpha: 2}' is neither JSON"),
        (["--input-shapes", SHAPES, "--ir-format", "jaxpr", "--ir-dest", "x.pb"], "needs --ir-format hlo"),
    ],
)
def test_malformed_input_exits_2(xl, tmp_path, model, args, message):
    result = xl("lower", model, *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x.pb").exists()


def test_missing_function_is_bad_input_and_tracing_error_fails(xl, tmp_path, model):
    result = xl("lower", "model.py:g", "--input-shapes", SHAPES)
    assert result.returncode == 2 and "has no function 'g'" in result.stderr
    result = xl(
        "lower",
        model,
        "--input-shapes",
        '[("x", "f32[2,4,3]"), ("y", "f32[5,2]"), ("z", "f32[2]")]',
        "--constants",
        CONSTANTS,
    )
    assert result.returncode == 1 and "lowering model.py:f failed" in result.stderr


@pytest.mark.parametrize(
    "constants,message",
    [
        (None, "f(x, y, z, alpha, beta): no value for 'alpha', 'beta'; give each in --input-shapes"),
        ('{"alpha": 2.0}', "no value for 'beta'"),
        (
            '{"alpha": 2.0, "beta": 3.0, "gamma": 1}',
            "f(x, y, z, alpha, beta) has no parameter named 'gamma' (from --constants)",
        ),
    ],
)
def test_constants_checked_against_the_signature(xl, model, constants, message):
    args = ["--constants", constants] if constants else []
    result = xl("lower", model, "--input-shapes", SHAPES, *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "TypeError" not in result.stderr and "Traceback" not in result.stderr


def test_unwritable_ir_destinations_exit_2(xl, tmp_path, model):
    (tmp_path / "folder").mkdir()
    early = xl("lower", model, "--input-shapes", SHAPES, "--constants", CONSTANTS, "--ir-dest", "folder")
    assert early.returncode == 2 and "--ir-dest folder: is a directory" in early.stderr
    assert "lowering model.py" not in early.stderr, "refused before the lowering starts"
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc (a folder where nobody, root included, can create files)")
    late = xl("lower", model, "--input-shapes", SHAPES, "--constants", CONSTANTS, "--ir-human-dest", "/proc/x.txt")
    assert late.returncode == 2, late.stderr
    assert (
        "--ir-human-dest /proc/x.txt: cannot create a file in /proc" in late.stderr and "Traceback" not in late.stderr
    )


def test_signature_check_on_old_jax(xl, model, old_jax_python):
    result = xl("lower", model, "--python", old_jax_python, "--input-shapes", SHAPES, "--constants", '{"alpha": 1}')
    assert result.returncode == 2 and "no value for 'beta'" in result.stderr, result.stderr
