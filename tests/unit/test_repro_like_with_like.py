"""Issue 41: an expected outcome is reproduced only by the same kind of evidence (pure: records in, answers out).

The modules are shaped as the real jax-ml/jax#29537 replays are (tests/integration/replay/test_fixed_yet.py runs
them): the bad jaxlib matches the snapshot its own run recorded and differs from the good jaxlib (the reference);
the good jaxlib matches the reference and differs from that snapshot."""

from __future__ import annotations

from xlatools.records.replay import Comparison, InputSource, ModuleRecord, PackedOptions, RunRecord
from xlatools.replay.outcome import (
    LISTED_START,
    against_a_reference,
    finish_module,
    judged_against,
    mismatch_figures,
    table,
)
from xlatools.replay.repro import judged_otherwise
from xlatools.replay.repro_verdict import describe, expected_of, nothing_to_reproduce, verdict
from xlatools.vocab import PrecisionMode

NAMES = {"reference-python-1": "reference-python-1 (jaxlib 0.6.1)"}


def _compared(against: str, ok: bool, mismatches: int = 16385) -> Comparison:
    return Comparison(
        against=against,
        ok=ok,
        mismatches=0 if ok else mismatches,
        elements=16385,
        max_abs_error=0.0 if ok else 524032.0,
    )


def _replayed(snapshot_ok: bool | None, reference_ok: bool | None, seed: int | None = None) -> ModuleRecord:
    """A replay of `0004 jit_f`: the test compared with its snapshot (None: no snapshot), a reference-python-1 run
    compared with the test (None: no reference)."""
    test = RunRecord(label="test", python="/bad", phase="compare", fingerprint="f" * 64)
    if snapshot_ok is not None:
        test.comparisons = [_compared("snapshot", snapshot_ok)]
    runs = [test]
    if reference_ok is not None:
        runs.append(
            RunRecord(
                label="reference-python-1", python="/good", comparisons=[_compared("reference-python-1", reference_ok)]
            )
        )
    source = InputSource(kind="snapshot", path="/b/x.pb") if seed is None else InputSource(kind="random", seed=seed)
    return finish_module(ModuleRecord(name="jit_f", id=4, runs=runs, input_source=source))


def test_the_good_jaxlib_is_not_reported_as_still_broken():
    """The issue's case: packed on the bad jaxlib against the good one; replayed on the good jaxlib, the module
    matches the reference exactly and differs only from the snapshot the bad run computed."""
    bad, good = _replayed(snapshot_ok=True, reference_ok=False), _replayed(snapshot_ok=False, reference_ok=True)
    assert (bad.outcome, bad.failed_run, judged_against(bad)) == (
        "mismatch",
        "reference-python-1",
        ["reference-python-1"],
    )
    assert (good.outcome, judged_against(good)) == ("ok", ["reference-python-1"])  # the snapshot does not judge
    assert any(n.startswith(LISTED_START) and "524032" not in n and "5.24e+05" in n for n in good.notes), good.notes
    assert "snapshot: 16385/16385 differ (max abs error 5.24e+05) (listed, not judged)" in table([good])
    expected = [expected_of(bad)]
    assert expected[0].against == ["reference-python-1"] and describe(expected[0], NAMES).endswith("(jaxlib 0.6.1)")
    assert verdict(expected, [bad], names=NAMES, referenced=True).outcome == "reproduced"
    fixed = verdict(expected, [good], names=NAMES, referenced=True)
    assert fixed.outcome == "not-reproduced" and fixed.exit_code == 0
    assert "0004 jit_f: ok, expected mismatch against reference-python-1 (jaxlib 0.6.1)" in fixed.differences
    # wrong on both counts: still the reference's mismatch, the snapshot listed beside it
    both = _replayed(snapshot_ok=False, reference_ok=False)
    assert judged_against(both) == ["reference-python-1"] and verdict(expected, [both]).outcome == "reproduced"
    assert mismatch_figures(both).startswith("16385/16385 elements differ")


def test_a_mismatch_against_the_snapshot_is_reproduced_only_by_one_against_the_snapshot():
    """Without a reference the snapshot judges (a good run's recorded result, replayed by the bad jaxlib)."""
    golden = _replayed(snapshot_ok=False, reference_ok=None)
    assert (golden.outcome, judged_against(golden)) == ("mismatch", ["snapshot"])
    expected = [expected_of(golden)]
    assert verdict(expected, [_replayed(snapshot_ok=False, reference_ok=None)]).outcome == "reproduced"
    assert verdict(expected, [_replayed(snapshot_ok=True, reference_ok=None)]).outcome == "not-reproduced"
    against_reference = expected_of(_replayed(snapshot_ok=True, reference_ok=False))
    other = verdict([against_reference], [golden])  # a mismatch of another kind is no reproduction
    assert other.outcome == "not-reproduced"
    assert "mismatch against snapshot, expected mismatch against reference-python-1" in other.differences[0]


def test_a_crash_is_reproduced_only_by_the_same_signal_of_the_same_run():
    def crashed(signal: str, label: str = "test") -> ModuleRecord:
        runs = [RunRecord(label="test", python="/bad", phase="compile")]
        if label != "test":
            runs.append(RunRecord(label=label, python="/good", phase="compile"))
        runs[-1].failure, runs[-1].signal = "crash", signal  # type: ignore[assignment]
        return finish_module(ModuleRecord(name="jit_f", id=4, runs=runs))

    expected = [expected_of(crashed("SIGABRT"))]
    assert describe(expected[0]) == "crash SIGABRT in test"
    assert verdict(expected, [crashed("SIGABRT")]).outcome == "reproduced"
    assert verdict(expected, [crashed("SIGSEGV")]).outcome == "not-reproduced"
    assert verdict(expected, [crashed("SIGABRT", "reference-python-1")]).outcome == "not-reproduced"


def test_old_packs_and_other_inputs_are_never_a_verdict():
    bad = _replayed(snapshot_ok=True, reference_ok=False)
    old = expected_of(_replayed(snapshot_ok=False, reference_ok=None))
    old.against = None  # a pack made before outcomes said what they were judged against
    answer = verdict([old], [bad], referenced=True)
    assert answer.outcome == "cannot-run" and "make the pack again" in answer.reason
    assert verdict([old], [_replayed(snapshot_ok=False, reference_ok=None)]).outcome == "reproduced"
    seeded = [expected_of(_replayed(snapshot_ok=None, reference_ok=False, seed=0))]
    moved = verdict(seeded, [_replayed(snapshot_ok=None, reference_ok=False, seed=1)])
    assert moved.outcome == "cannot-run" and "random (seed 1)" in moved.reason and "random (seed 0)" in moved.reason


def test_a_replay_judged_with_other_tolerances_is_not_judged_as_the_pack():
    from xlatools.records.replay import ReplayRequest

    packed = PackedOptions(atol=0.0, rtol=0.0, precision=PrecisionMode.AUTO)
    same = ReplayRequest(source="p", python="/py", atol=0.0, rtol=0.0, precision=PrecisionMode.AUTO)
    assert judged_otherwise(packed, same) is None
    looser = ReplayRequest(source="p", python="/py", atol=1e-3, rtol=0.0, precision=PrecisionMode.AUTO)
    assert "atol 0.001 (the pack's: 0.0)" in str(judged_otherwise(packed, looser))
    older = PackedOptions()  # made before --precision: judged as compiled
    assert judged_otherwise(older, ReplayRequest(source="p", python="/py", precision=PrecisionMode.AS_COMPILED)) is None


def test_a_pack_without_a_failure_says_how_to_make_one_that_answers():
    healthy = [expected_of(_replayed(snapshot_ok=True, reference_ok=None))]
    said = nothing_to_reproduce(healthy)
    assert said and "--reference-python PY" in said and "--reference cpu" in said
    assert "--reference-python" not in str(nothing_to_reproduce(healthy, referenced=True))


def test_triage_picks_a_module_that_differs_from_last_good_not_from_its_own_snapshot():
    assert against_a_reference(_replayed(snapshot_ok=True, reference_ok=False))
    assert not against_a_reference(_replayed(snapshot_ok=False, reference_ok=True))
    assert not against_a_reference(_replayed(snapshot_ok=False, reference_ok=None))


def test_a_replay_bundle_packs_its_replay_or_names_what_it_would_lose(tmp_path):
    """Issue 37 item 5, the plan alone (tests/integration/replay/test_fixed_yet.py packs a real replay bundle)."""
    import sys
    from dataclasses import replace

    import pytest

    from xlatools.errors import UsageError
    from xlatools.records.replay import PlanRecord, ReplayManifest, ReplayRequest
    from xlatools.replay.pack_replay import carry_replay

    asked = ReplayRequest(
        source=tmp_path,
        python=sys.executable,
        xla_flags=["--xla_cpu_enable_fast_math=true"],
        atol=0.0,
        rtol=0.0,
        reference_pythons=[sys.executable],
        precision=PrecisionMode.AUTO,
    )
    replay = ReplayManifest(
        source=str(tmp_path),
        plan=PlanRecord(request=asked, source_kind="bundle", name="r"),
        modules=[
            ModuleRecord(name="jit_f", id=4, outcome="mismatch"),
            ModuleRecord(name="jit_g", id=6, outcome="skipped"),
        ],
    )
    given = ReplayRequest(source=tmp_path / "r", python="/this", atol=1e-3, rtol=0.0)
    request, notes = carry_replay(replay, tmp_path / "r", given, {"rtol"})
    assert (request.modules, request.xla_flags, request.atol, request.rtol) == (["4"], asked.xla_flags, 0.0, 0.0)
    assert (request.python, request.reference_pythons, request.source) == (sys.executable, [sys.executable], tmp_path)
    assert any("--xla-flag --xla_cpu_enable_fast_math=true" in n and "--atol 0.0" in n for n in notes), notes
    asked.reference_pythons = ["/gone/bin/python"]
    with pytest.raises(UsageError) as refused:
        carry_replay(replay, tmp_path / "r", given, set())
    assert "reference interpreter /gone/bin/python is gone" in refused.value.message
    request, _ = carry_replay(
        replay, tmp_path / "r", replace(given, reference_pythons=[sys.executable]), {"reference_pythons"}
    )
    assert request.reference_pythons == [sys.executable]  # given again on the command line: nothing is lost


def test_arguments_a_run_recorded_are_the_packs_snapshot():
    recorded = _replayed(snapshot_ok=True, reference_ok=False)
    recorded.input_source = InputSource(kind="recorded", path="/b/recorded/x.pb")  # run --record-inputs
    assert verdict([expected_of(recorded)], [_replayed(snapshot_ok=True, reference_ok=False)]).outcome == "reproduced"


def test_a_reference_is_the_same_evidence_by_its_jaxlib_whatever_its_label():
    """A pack made when references were `reference-python-N` is reproduced by a replay that names them by their jax
    version (`reference-jax-0.6.1`), and only by a mismatch against that jaxlib; a reference whose jaxlib the pack
    does not say is any reference interpreter."""
    from dataclasses import replace

    from xlatools.replay.repro_verdict import same_evidence

    old = expected_of(_replayed(snapshot_ok=True, reference_ok=False))  # against reference-python-1
    assert old.against == ["reference-python-1"]
    same = replace(old, against=["reference-jax-0.6.1"], failed_run="reference-jax-0.6.1")
    other = replace(old, against=["reference-jax-0.6.0"], failed_run="reference-jax-0.6.0")
    assert same_evidence(old, same, NAMES) and same_evidence(old, replace(same), {})  # jaxlib unknown: any
    assert not same_evidence(old, other, NAMES)
    second = replace(same, against=["reference-jax-0.6.1-2"], failed_run="reference-jax-0.6.1-2")
    assert same_evidence(same, second, NAMES)  # the second reference of one version: the same jaxlib
    assert not same_evidence(same, replace(old, against=["snapshot"]), NAMES)
