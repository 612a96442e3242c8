"""replay/precision.py on real GPU text (the H200 fixtures) and on the lines XLA prints: which dots and convolutions
are below full precision, the rewrite that raises them (nothing else changes), and the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import REPO, require
from xlatools.records.replay import Comparison, ModuleRecord, PrecisionCheck, RunRecord
from xlatools.replay import precision
from xlatools.replay.outcome import exit_code, finish_module
from xlatools.vocab import PrecisionMode, ReplayOutcome

GPU = REPO.parent / "shared" / "fixtures" / "gpu-h200"
STEP = GPU / "flax-cnn" / "xla_dump" / "module_110484.jit_step.before_optimizations.txt"


def _module(*lines: str) -> str:
    return "HloModule m\n\nENTRY %main {\n" + "\n".join(f"  {line}" for line in lines) + "\n}\n"


@pytest.fixture
def step_text() -> str:
    require("gpu_fixtures", STEP.is_file(), f"{STEP} (the H200 fixtures in ../shared)")
    return STEP.read_text()


def test_the_flax_step_has_eleven_reduced_instructions_and_only_they_change(step_text):
    raised_text, raised = precision.raise_precision(step_text)
    assert len(raised) == 11  # 5 convolutions and 6 dots, as measured on the H200
    assert {r.opcode for r in raised} == {"dot", "convolution"}
    assert all(r.was.startswith("operand precision DEFAULT") for r in raised)
    before, after = step_text.splitlines(keepends=True), raised_text.splitlines(keepends=True)
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 11
    for old, new in changed:
        assert new.rstrip("\n") == old.rstrip("\n") + ", operand_precision={highest,highest}"
    assert precision.reduced(raised_text) == []  # raised once, nothing is left below full precision
    assert precision.raise_precision(raised_text) == (raised_text, [])


def test_which_lines_are_below_full_precision():
    text = _module(
        "%a = f32[2,3]{1,0} parameter(0)",
        "%b = f32[3,4]{1,0} parameter(1)",
        "%h = bf16[2,3]{1,0} parameter(2)",
        "%g = bf16[3,4]{1,0} parameter(3)",
        "%high = f32[2,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        "operand_precision={high,high}",
        "%full = f32[2,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        "operand_precision={highest,highest}",
        "%tf32 = f32[2,4]{1,0} dot(f32[2,3]{1,0} %a, f32[3,4]{1,0} %b), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}, algorithm=dot_tf32_tf32_f32",
        "%f32alg = f32[2,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_f32_f32_f32",
        "%bf16 = f32[2,4]{1,0} dot(%h, %g), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "ROOT %t = (f32[2,4]{1,0}) tuple(%high)",
    )
    found = {r.name: r.was for r in precision.reduced(text)}
    assert found == {"high": "operand_precision={high,high}", "tf32": "algorithm=dot_tf32_tf32_f32"}
    raised_text, _ = precision.raise_precision(text)
    lines = {line.split("=")[0].strip().lstrip("%"): line for line in raised_text.splitlines() if " = " in line}
    assert "operand_precision={highest,highest}" in lines["high"] and "{high,high}" not in lines["high"]
    assert "algorithm" not in lines["tf32"] and lines["tf32"].endswith("operand_precision={highest,highest}")
    assert lines["bf16"] in text and lines["f32alg"] in text  # bf16 operands, an f32 algorithm: left alone


def _comparison(ok: bool, max_abs: float) -> Comparison:
    return Comparison(against="reference-cpu", ok=ok, mismatches=0 if ok else 5, elements=10, max_abs_error=max_abs)


def test_the_verdict_and_the_exit_code():
    as_compiled = [_comparison(False, 0.15)]
    matches = RunRecord(label="test-highest", python="p", comparisons=[_comparison(True, 7.6e-5)])
    differs = RunRecord(label="test-highest", python="p", comparisons=[_comparison(False, 0.04)])
    failed = RunRecord(label="test-highest", python="p", failure=ReplayOutcome.COMPILE_ERROR, message="bad")
    assert precision.classify(as_compiled, matches)[0] == ReplayOutcome.PRECISION
    outcome, why = precision.classify(as_compiled, differs)
    assert outcome == ReplayOutcome.MISMATCH and "0.04" in why and "0.15" in why  # both errors shown
    assert precision.classify(as_compiled, failed)[0] == ReplayOutcome.MISMATCH  # no verdict weakened
    assert precision.classify(as_compiled, None)[0] == ReplayOutcome.MISMATCH

    module = ModuleRecord(
        name="jit_step",
        runs=[
            RunRecord(label="test", python="p"),
            RunRecord(label="reference-cpu", python="p", comparisons=as_compiled),
        ],
    )
    module.precision = PrecisionCheck(mode=PrecisionMode.AUTO, rule=precision.RULE, verdict=ReplayOutcome.PRECISION)
    assert finish_module(module).outcome == ReplayOutcome.PRECISION
    assert exit_code([ReplayOutcome.PRECISION, ReplayOutcome.OK]) == 0
    assert exit_code([ReplayOutcome.PRECISION, ReplayOutcome.MISMATCH]) == 1
    module.precision.verdict = ReplayOutcome.MISMATCH
    assert finish_module(module).outcome == ReplayOutcome.MISMATCH


def test_the_stand_in_rounds_only_what_a_gpu_runs_in_tf32(step_text, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("tf32_standin", REPO / "tests" / "standin" / "tf32.py")
    standin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(standin)
    rounded, count = standin.round_operands(step_text)
    assert count == 22  # both operands of the 11 instructions
    assert rounded.count("reduce-precision(") == 22 and "exponent_bits=8, mantissa_bits=10" in rounded
    assert standin.round_operands(precision.raise_precision(step_text)[0])[1] == 0  # at full precision: untouched
    script = Path(standin.interpreter("/bin/true", tmp_path))
    assert "stand-in" in script.read_text() and script.stat().st_mode & 0o100


def test_highest_needs_whole_text_before_any_bundle(tmp_path):
    from xlatools.errors import UsageError
    from xlatools.replay.full_precision import refuse_without_text
    from xlatools.replay.sources import ModuleSource

    proto_only = ModuleSource(name="jit_f", id=3, proto=tmp_path / "m.hlo.pb")
    with pytest.raises(UsageError, match="no HLO text to raise"):
        refuse_without_text([proto_only], PrecisionMode.HIGHEST, "auto")
    text = ModuleSource(name="jit_f", id=3, text=tmp_path / "m.txt")
    (tmp_path / "m.txt").write_text(_module("ROOT %a = f32[2]{0} parameter(0)"))
    with pytest.raises(UsageError, match="--from proto"):
        refuse_without_text([text], PrecisionMode.HIGHEST, "proto")
    refuse_without_text([text], PrecisionMode.HIGHEST, "auto")
    refuse_without_text([proto_only], PrecisionMode.AUTO, "auto")  # auto raises the text the test itself read
