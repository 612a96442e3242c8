"""reduce's pure parts: the HLO text model on real dumps, edits, search procedures, oracle verdicts, ISSUE.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.reduce import edits
from xlatools.reduce.hlo_text import HloSyntaxError, parse_module, print_module
from xlatools.reduce.issue import IssueFacts, commands, render_issue
from xlatools.reduce.oracle import script_verdict
from xlatools.reduce.plan import ReduceRequest, oracle_of
from xlatools.search import ddmin, largest_interesting, smallest_interesting

HLO = Path(__file__).resolve().parent.parent / "fixtures" / "hlo"
SUMMARY = HLO / "jaxlib-0.6.2.jit_summary.before_optimizations.txt"  # real: tests/integration/reduce/student_t.py


@pytest.fixture
def summary():
    return parse_module(SUMMARY.read_text())


@pytest.mark.parametrize("name", sorted(p.name for p in HLO.glob("*before_optimizations.txt")))
def test_real_dumps_print_and_parse_again_unchanged(name):
    module = parse_module((HLO / name).read_text())
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    assert parse_module(text).instruction_count() == module.instruction_count()


def test_real_module_structure(summary):
    assert summary.instruction_count() == 158
    assert summary.entry.name == "main.167" and summary.entry.root.opcode == "tuple"
    assert len(summary.entry.root.operands) == 4
    called = {name for comp in summary.reachable() for inst in comp.instructions for name in inst.called}
    assert {"_var.74", "region_0.34"} <= called
    assert "metadata" not in print_module(summary, metadata=False)


def test_syntax_errors_name_the_line():
    with pytest.raises(HloSyntaxError, match="line 4"):
        parse_module("HloModule m\n\nENTRY %e {\n  %a = f32[] nonsense\n}\n")


def test_keep_outputs_removes_what_only_the_others_used(summary):
    cand = edits.initial(summary, 4)
    kept = edits.keep_outputs(cand, [2])
    assert kept.module.entry.root.opcode != "tuple" and kept.outputs == [2]
    assert kept.module.instruction_count() < summary.instruction_count()
    assert print_module(cand.module) == print_module(summary)  # edits never change their input


def test_parameters_replace_instructions_and_are_renumbered(summary):
    cand = edits.inline_all_calls(edits.initial(summary, 4))
    assert not edits.calls_in(cand.module)
    target = [i.name for i in cand.module.entry.instructions if i.opcode == "exponential"][0]
    out = edits.to_parameters(edits.keep_outputs(cand, [0]), [target], "test")
    numbers = sorted(p.parameter_number for p in out.module.entry.parameters())
    assert numbers == list(range(len(numbers)))
    assert out.inputs[target] == f"value:{target}"
    assert sorted(out.input_sources()) == sorted(out.inputs.values())


def test_cut_bypass_and_constants_keep_shapes(summary):
    cand = edits.inline_all_calls(edits.initial(summary, 4))
    cut = edits.cut_after(cand, 20)
    assert len(cut.module.entry.instructions) <= 21
    entry = cand.module.entry
    negate = next(i for i in entry.instructions if i.opcode == "negate")
    bypassed = edits.bypass(cand, entry.name, negate.name, negate.operands[0])
    assert bypassed.module.entry.get(negate.name) is None
    zero = edits.to_constant(cand, entry.name, negate.name, "nan")
    assert zero.module.entry.get(negate.name).opcode in ("constant", "broadcast")


def test_ddmin_finds_a_one_minimal_set():
    calls = []

    def test(configs):
        calls.extend(configs)
        return [{3, 7} <= set(c) for c in configs]

    assert sorted(ddmin(list(range(16)), test, batch=2)) == [3, 7]
    assert len(calls) < 60


def test_prefix_searches():
    assert smallest_interesting(100, lambda ps: [p >= 37 for p in ps], batch=3) == 37
    assert largest_interesting(100, lambda ps: [p <= 61 for p in ps], batch=1) == 61


@pytest.mark.parametrize("code, interesting", [(0, False), (1, True), (127, True), (125, None)])
def test_script_exit_codes_follow_git_bisect_run(code, interesting):
    assert script_verdict(code, "ok" if code == 0 else "failed", None).interesting is interesting


def test_script_that_dies_cannot_run():
    with pytest.raises(EnvironmentMissing):
        script_verdict(-11, "failed", None)


def test_oracle_choice():
    base = dict(source=Path("x"), python="python")
    with pytest.raises(UsageError, match="one oracle"):
        oracle_of(ReduceRequest(**base, references=["cpu"], error="x"), False)
    with pytest.raises(UsageError, match="no oracle"):
        oracle_of(ReduceRequest(**base), False)
    with pytest.raises(UsageError, match="regular expression"):
        oracle_of(ReduceRequest(**base, error="("), False)
    assert oracle_of(ReduceRequest(**base), True).kind == "recorded"
    assert oracle_of(ReduceRequest(**base, reference_pythons=["p"]), True).kind == "mismatch"


def test_issue_report_has_every_part():
    from xlatools.records.reduce import RanWith, Verdict
    from xlatools.records.replay import Comparison
    from xlatools.records.run import Device, InterpreterFacts
    from xlatools.vocab import Interest, OracleKind

    verdict = Verdict(
        interest=Interest.INTERESTING,
        reason="8/8 differ",
        comparison=Comparison(against="reference-python-1", ok=False, mismatches=8, elements=8, nan_mismatches=8),
    )
    facts = IssueFacts(
        module_name="0001 jit_f",
        oracle="outputs differ",
        oracle_kind=OracleKind.MISMATCH,
        instructions_before=158,
        instructions_after=5,
        reduced_hlo="HloModule m\n",
        verdict=verdict,
        test=RanWith(versions=InterpreterFacts(jax="0.6.2", jaxlib="0.6.2"), device=Device(platform="cpu", kind="cpu")),
        reference=RanWith(
            versions=InterpreterFacts(jaxlib="0.10.2"), device=Device(platform="gpu", kind="NVIDIA H200")
        ),
        platform="cpu",
        xla_flags=["--xla_cpu_x=1"],
        disabled_passes=["algsimp"],
        culprit_pass="algsimp",
        inputs_text="input 0: f64[8]",
        test_outputs_text="output 0: bad",
        reference_outputs_text="output 0: nan",
        rechecks="interesting x3",
        commands=commands(["--xla_cpu_x=1"], "cpu", "python", "repro.tar.gz", "ok"),
    )
    text = render_issue(facts)
    for part in (
        "jaxlib 0.6.2",
        "Minimal HLO",
        "Inputs",
        "Expected",
        "Actual",
        "run_hlo_module",
        "xlatools replay",
        "xlatools repro run",
        "culprit pass",
        "--xla_cpu_x=1",
        "8/8 elements differ",
        "8 of them NaN where the other side is not",
        "max abs error 0, max rel error 0 among the elements that are numbers on both sides",
        "device cpu\n",  # not `device cpu cpu`: a CPU's kind is `cpu`
        "device gpu NVIDIA H200",
    ):
        assert part in text


def test_differences_never_read_as_no_error():
    from xlatools.records.replay import Comparison
    from xlatools.reduce.oracle import judge_outputs
    from xlatools.replay.outcome import difference

    def c(**kw):
        return Comparison(against="reference", ok=False, elements=8, **kw)

    assert difference(c(mismatches=8, nan_mismatches=8)) == "8/8 elements differ (8 NaN on one side only)"
    assert difference(c(mismatches=3, max_abs_error=0.5)) == "3/8 elements differ (max abs error 0.5)"
    assert difference(c(mismatches=5, nan_mismatches=2, max_abs_error=0.25)) == (
        "5/8 elements differ (max abs error 0.25, 2 NaN on one side only)"
    )
    assert difference(c(mismatches=2), "") == "2/8 differ (2 integer or infinite values unequal)"
    assert "max abs error 0" not in difference(c(mismatches=8, nan_mismatches=8, max_abs_error=0.0))
    spec = oracle_of(ReduceRequest(source="m.hlo.txt", python="/py", references=["cpu"]), False)
    verdict = judge_outputs(spec, _ran(c(mismatches=8, nan_mismatches=8)), _ran(c(mismatches=8, nan_mismatches=8)))
    assert verdict.reason == "8/8 elements differ (8 NaN on one side only)"


def _ran(comparison):
    from xlatools.records.replay import RunRecord

    return RunRecord(label="x", python="/py", comparisons=[comparison])


def test_a_reduction_says_why_it_stopped_and_what_would_go_further(summary):
    from xlatools.records.reduce import Counters, Round
    from xlatools.reduce.ending import explain_end
    from xlatools.vocab import OracleKind

    one = edits.keep_outputs(edits.inline_all_calls(edits.initial(summary, 4)), [0])
    rounds = [
        Round(number=1, phase="inline", instructions_before=158, instructions_after=146, candidates=1),
        Round(number=2, phase="outputs", instructions_before=146, instructions_after=111, candidates=3),
        Round(number=3, phase="inline", instructions_before=111, instructions_after=111),
        Round(number=4, phase="outputs", instructions_before=111, instructions_after=111),
    ]
    end = explain_end(
        ("inline", "outputs"), rounds, Counters(), OracleKind.RECORDED, one,
        out_of_time=False, max_time=None, values_failed=False,
    )  # fmt: skip
    assert "found no smaller module" in end.reason
    assert end.strategies == [
        "inline: nothing to try (no call left to inline)",
        "outputs: nothing to try (one output left)",
    ]
    assert "recorded result judges only the outputs" in end.not_judged[0]
    assert any("--reference cpu" in line and "--reference-python" in line for line in end.further)

    phases = ("inline", "outputs", "cut", "outputs", "front", "each")
    rounds = [Round(number=n, phase=p, instructions_before=9, candidates=4) for n, p in enumerate(phases, 1)]
    end = explain_end(
        phases, rounds, Counters(unparsable=2), OracleKind.MISMATCH, one,
        out_of_time=False, max_time=None, values_failed=True, skipped=["the reference cannot run it (crash)"],
    )  # fmt: skip
    assert end.strategies[-1] == "each: 4 candidate(s), none smaller and still interesting"
    assert (
        end.not_judged[0]
        == "1 candidate(s) the oracle could not judge (skip), e.g. the reference cannot run it (crash)"
    )
    assert (
        "2 candidate(s) the target's HLO parser refused" in end.not_judged and "no recorded values" in end.not_judged[2]
    )
    assert "edit reduced.hlo.txt by hand" in end.further[0]

    end = explain_end(
        phases, rounds[:2], Counters(), OracleKind.SCRIPT, one, out_of_time=True, max_time=60, values_failed=False
    )
    assert end.reason == "the --max-time budget (60 s) ran out" and end.strategies == []
    assert "continues from the saved state" in end.further[0]


def test_disabled_passes_reach_every_test_run_and_the_culprit_comes_from_a_bisection(tmp_path):
    from xlatools.bisect.state import State
    from xlatools.commands.reduce_cmd import culprit_of
    from xlatools.records.bisect import BisectAnswer, Candidate, CandidateRef, PassFound, PassSpec, ProgramTestSpec
    from xlatools.vocab import BisectStatus
    from xlatools.reduce.plan import plan_reduce
    from xlatools.replay.sources import from_file

    plan = plan_reduce(
        ReduceRequest(source=SUMMARY, python="python", reference_pythons=["good"], disable_passes=["algsimp", "cse"]),
        [from_file(SUMMARY)],
        "file",
    )
    assert "--xla_disable_hlo_passes=algsimp,cse" in plan.test.xla_flags
    assert not any("disable" in f for f in plan.reference.xla_flags)
    folder = tmp_path / "passes-prog"
    folder.mkdir()
    spec = PassSpec(python="python", test=ProgramTestSpec(program="prog.py"))
    state = State(
        folder=folder,
        kind="passes",
        spec=spec,
        candidates=[Candidate(key="algsimp", label="algsimp")],
        status=BisectStatus.DONE,
        result=BisectAnswer(
            last_good=CandidateRef(key="algsimp", label="x"),
            first_bad=CandidateRef(key="baseline", label="y"),
            passes=[PassFound(name="algsimp")],
        ),
    )
    state.save()
    assert culprit_of(folder) == "algsimp"
    state.status, state.result = BisectStatus.RUNNING, None
    state.save()
    with pytest.raises(UsageError, match="no culprit"):
        culprit_of(folder)


def test_split_top_level_reads_strings_as_closing_bracket_does():
    """An escaped backslash ends with the string's closing quote (a Windows path in metadata), so the
    comma after it splits; an escaped quote does not end the string."""
    from xlatools.reduce.hlo_text import split_top_level

    assert split_top_level(r'a="C:\\", b={x, y}, c="say \"hi, there\""') == [
        r'a="C:\\"',
        "b={x, y}",
        r'c="say \"hi, there\""',
    ]
