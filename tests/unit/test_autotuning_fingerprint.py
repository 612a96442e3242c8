"""Fingerprints that ignore what only printing changes, and `diff` telling autotuning from a pass, on the real
GPU output of ../shared/fixtures/gpu-h200 (two runs of one flax program on one H200: 6 lines of jit_step's
optimised HLO differ, all autotuned backend_config and one fusion's kind)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import require, run_cli
from xlatools.run.hlo_canon import fingerprint, kernel_neutral_fingerprint

FIXTURE = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "gpu-h200" / "flax-cnn"
STEP = "module_110484.jit_step"
AFTER = f"{STEP}.sm_9.0a_gpu_after_optimizations.txt"
LINE = '  %f = f32[4]{0} fusion(%p), kind=kCustom, calls=%c, backend_config={"b":{"y":1,"x":[2]},"a":"z"}'


@pytest.fixture(scope="module")
def runs() -> tuple[str, str]:
    require("gpu_fixtures", (FIXTURE / "second-run" / AFTER).is_file(), f"{FIXTURE} (../shared/fixtures) is missing")
    return (FIXTURE / "xla_dump" / AFTER).read_text(), (FIXTURE / "second-run" / AFTER).read_text()


def _module(line: str) -> str:
    return f"HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {{\n  %p = f32[4]{{0}} parameter(0)\n{line}\n}}\n"


def test_key_order_inside_backend_config_is_printing_only():
    shuffled = LINE.replace('{"b":{"y":1,"x":[2]},"a":"z"}', '{"a":"z","b":{"x":[2],"y":1}}')
    assert fingerprint(_module(LINE)) == fingerprint(_module(shuffled))
    assert fingerprint(_module(LINE)) != fingerprint(_module(LINE.replace('"z"', '"w"')))  # values still count


def test_two_gpu_compiles_differ_only_in_autotuning(runs):
    first, second = runs
    assert fingerprint(first) != fingerprint(second)  # the kernels' configurations differ: a real difference
    assert kernel_neutral_fingerprint(first) == kernel_neutral_fingerprint(second)
    changed = first.replace(" multiply(", " add(", 1)  # what a pass would do
    assert kernel_neutral_fingerprint(changed) != kernel_neutral_fingerprint(first)


def test_diff_reports_autotuning_not_a_pass_divergence(runs, tmp_path):
    for side, folder in (("a", FIXTURE / "xla_dump"), ("b", FIXTURE / "second-run")):
        (tmp_path / side).mkdir()
        for name in (f"{STEP}.before_optimizations.txt", AFTER):
            shutil.copy(folder / name, tmp_path / side / name)
    result = run_cli("diff", "a", "b", "--json", cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    module = data["modules"][0]
    assert module["optimised"] == "autotuning differs" and module["autotuning_only"] and not module["same_output"]
    assert data["modules_differ"] is False and data["headline"] is None
    assert "autotuned kernel configuration" in module["text"]["title"]
    shown = run_cli("diff", "a", "b", cwd=tmp_path, timeout=120)
    assert "autotuning differs" in shown.stdout


def test_a_pack_made_before_keys_were_sorted_still_matches_its_fingerprint(tmp_path):
    """Packs record the fingerprint of their xlatools: one made before backend_config keys were sorted holds the
    unsorted one; the same compile must still match it (--match fingerprint), and another compile must not."""
    from xlatools.records.replay import ModuleRecord, PackModule, RunRecord
    from xlatools.replay.repro_verdict import verdict
    from xlatools.vocab import PackMatch, ReplayOutcome

    (tmp_path / "optimized.txt").write_text(_module(LINE))
    got = ModuleRecord(
        name="m",
        id=1,
        runs=[RunRecord(label="test", python="/py", dir=str(tmp_path), fingerprint=fingerprint(_module(LINE)))],
    )
    got.fingerprint = got.runs[0].fingerprint
    old = PackModule(
        name="m", id=1, outcome=ReplayOutcome.OK, fingerprint=fingerprint(_module(LINE), sorted_json=False)
    )
    assert old.fingerprint != got.fingerprint  # the key order of LINE is not sorted
    assert verdict([old], [got], PackMatch.FINGERPRINT).differences == []
    other = PackModule(
        name="m", id=1, outcome=ReplayOutcome.OK, fingerprint=fingerprint(_module(LINE.replace('"z"', '"w"')))
    )
    assert verdict([other], [got], PackMatch.FINGERPRINT).differences
