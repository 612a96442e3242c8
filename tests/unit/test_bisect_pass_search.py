"""`bisect passes`' search with plain callables: a set answer, passes the program needs left enabled, passes
that take over, the judging of steps with passes disabled, resume without repeating a step, and what a
resumed bisection compares of its test (bisect/testfiles.py)."""

from __future__ import annotations

import os
import time

import pytest

from xlatools.bisect.engine import NoReduction, Oracle, StepVerdict
from xlatools.bisect.pass_rules import BROKE, Baseline, broke, broke_reason, known_needed
from xlatools.bisect.pass_run import left_enabled
from xlatools.bisect.pass_search import Answer, minimal_good, search_passes
from xlatools.bisect.passes import check_pass_names
from xlatools.bisect.rule import Rule
from xlatools.bisect.testfiles import changes
from xlatools.errors import UsageError
from xlatools.records.bisect import PassOptions, StepDetail, TestFile
from xlatools.vocab import StepOutcome

# The lean program of tests/integration/bisect/test_bisect_passes.py on jaxlib 0.10.2: its candidates, the
# set whose disabling leaves no fusion, and the pass without which the program aborts.
POOL = [
    "layout-assignment",
    "copy-insertion",
    "shape-canonicalizer",
    "fusion-wrapper",
    "algsimp",
    "simplification",
    "fusion",
    "reshape-decomposer",
    "dot-library-rewriter",
]
ANSWER = {"fusion", "fusion-wrapper", "dot-library-rewriter"}


def program(answer=ANSWER, needs=("copy-insertion",), takes_over=None, breaks_together=()):
    """Disabling a set: broke when it holds a pass the program needs (or all of `breaks_together`), good when
    it holds `answer`, else bad. `takes_over`: pass -> the passes that change the module once it is disabled."""
    asked: list[tuple[str, ...]] = []

    def ask(subset: tuple[str, ...], role: str) -> Answer:
        asked.append(subset)
        if set(needs) & set(subset) or (breaks_together and set(breaks_together) <= set(subset)):
            return Answer.BROKE
        return Answer.GOOD if answer <= set(subset) else Answer.BAD

    def took_over(subset: tuple[str, ...]) -> list[str]:
        return [p for name in subset for p in (takes_over or {}).get(name, [])]

    return ask, took_over, asked


def test_a_set_answer_with_a_needed_pass_found_breaking():
    ask, took_over, asked = program()
    found = search_passes(POOL, {}, ask, took_over)
    assert set(found.culprits) == ANSWER and list(found.culprits) == [p for p in POOL if p in ANSWER]
    assert found.left_enabled == {"copy-insertion": "disabling it breaks the program"}
    assert len(set(asked)) <= 18
    for name in found.culprits:  # 1-minimal: enabling any one of them again is bad
        assert ask(tuple(p for p in found.culprits if p != name), "check") == Answer.BAD


def test_the_backend_table_leaves_copy_insertion_enabled_without_a_step():
    ask, took_over, asked = program()
    left = left_enabled(POOL, "cpu", PassOptions())
    assert list(left) == ["copy-insertion"] and "needed on cpu" in left["copy-insertion"]
    assert "sharding-remover" in known_needed("cpu") and "sharding-remover" not in known_needed("gpu")
    found = search_passes(POOL, left, ask, took_over)
    assert set(found.culprits) == ANSWER and not any("copy-insertion" in s for s in asked)
    assert left_enabled(POOL, "cpu", PassOptions(include=["copy-insertion"])) == {}
    assert left_enabled(POOL, "cpu", PassOptions(exclude=["algsimp"]))["algsimp"] == "--exclude-pass"
    assert "copy-insertion" in known_needed("gpu")


def test_passes_that_break_the_program_only_together_leave_one_enabled():
    # seen on a flax + optax step (jaxlib 0.10.2): with layout-assignment and fusion-wrapper both disabled XLA
    # aborts (Check failed: index.ShapeIsCompatible(shape_)); fusion-wrapper is part of the answer
    ask, took_over, _ = program(needs=(), breaks_together=("layout-assignment", "fusion-wrapper"))
    found = search_passes(POOL, {}, ask, took_over)
    assert set(found.culprits) == ANSWER
    assert found.left_enabled == {"layout-assignment": "disabling it together with fusion-wrapper breaks the program"}


def test_a_pass_that_takes_over_joins_the_candidates():
    # fusion-wrapper did not change the module in the baseline: fusion had fused everything
    pool = [p for p in POOL if p != "fusion-wrapper"]
    ask, took_over, _ = program(needs=(), takes_over={"fusion": ["fusion-wrapper", "copy-insertion"]})
    found = search_passes(pool, {"copy-insertion": "needed"}, ask, took_over)
    assert set(found.culprits) == ANSWER and list(found.added) == ["fusion-wrapper"]


def test_still_bad_with_everything_disabled_and_nothing_taking_over_is_no_reduction():
    ask, took_over, _ = program(answer={"not-a-candidate"}, needs=())
    with pytest.raises(NoReduction, match="still leaves the test bad") as caught:
        search_passes(POOL, {"copy-insertion": "needed"}, ask, took_over)
    assert "left enabled: copy-insertion (needed)" in caught.value.message
    assert "--include-pass" in caught.value.hint


def test_nothing_left_to_disable_is_no_reduction():
    ask, took_over, _ = program()
    with pytest.raises(NoReduction, match="no candidate pass is left"):
        search_passes(["copy-insertion"], {"copy-insertion": "--exclude-pass"}, ask, took_over)


def test_a_prefix_seen_good_while_looking_for_the_needed_pass_starts_the_search():
    # the needed pass comes last in the pool: the first prefix tried is already good
    pool = ["fusion-wrapper", "fusion", "dot-library-rewriter", "algsimp", "copy-insertion"]
    ask, took_over, asked = program()
    found = search_passes(pool, {}, ask, took_over)
    assert set(found.culprits) == ANSWER and "copy-insertion" not in found.left_enabled
    assert not any("copy-insertion" in s for s in asked[1:])


def test_the_search_resumes_from_recorded_steps_without_running_one_twice():
    steps, runs = [], []

    def step(key: str, label: str) -> StepVerdict:
        runs.append(key)
        if len(runs) == 5:
            raise KeyboardInterrupt
        disabled = set(key.split(","))
        if "copy-insertion" in disabled:
            return StepVerdict("skip", f"{BROKE}: crashed (SIGABRT, exit 134)")
        return StepVerdict("good" if ANSWER <= disabled else "bad")

    def ask(subset, role):
        key = ",".join(subset)
        oracle.ask(key, key, role)
        record = oracle.runs(key)[0]
        if broke(record):
            return Answer.BROKE
        return Answer.GOOD if record.outcome == StepOutcome.GOOD else Answer.BAD

    oracle = Oracle(steps, step, lambda record: None, lambda: "t")
    with pytest.raises(KeyboardInterrupt):
        search_passes(POOL, {}, ask, lambda s: [])
    oracle = Oracle(steps, step, lambda record: None, lambda: "t")
    found = search_passes(POOL, {}, ask, lambda s: [])
    assert set(found.culprits) == ANSWER and oracle.replayed == 4 and len(runs) == len(set(runs)) + 1


def test_the_prefix_search_asks_fewer_steps_than_ddmin_for_a_set():
    from xlatools import search

    pool = [p for p in POOL if p != "copy-insertion"]
    ask, _, asked = program(needs=())
    assert minimal_good(pool, ask) == ("fusion-wrapper", "fusion", "dot-library-rewriter")
    by_ddmin: set[tuple[str, ...]] = set()

    def test(tries):
        by_ddmin.update(tuple(t) for t in tries)
        return [ANSWER <= set(t) for t in tries]

    assert set(search.ddmin(pool, test)) == ANSWER
    assert (len(set(asked)), len(by_ddmin)) == (11, 24)  # docs/bisect.md; a real run with ddmin took those 24 too


def test_minimal_good_of_a_single_pass():
    ask, _, asked = program(answer={"fusion"}, needs=())
    assert minimal_good(POOL, ask) == ("fusion",) and len(asked) <= 5


@pytest.mark.parametrize(
    "outcome,code,rule,baseline,broken",
    [
        ("bad", 134, Rule(), 1, "crashed (SIGABRT, exit 134)"),  # the false verdict
        ("bad", 139, Rule(), 139, "crashed (SIGSEGV, exit 139)"),  # a crash unless --bad-exit names it
        ("bad", 134, Rule(bad_exit=(134,)), 134, None),
        ("bad", 1, Rule(), 1, None),  # the test's own bad
        ("bad", 2, Rule(), 1, "exit 2, not the exit 1 of the test's bad in the baseline"),
        ("skip", 134, Rule(bad_exit=(1,)), 1, "crashed (SIGABRT, exit 134)"),
        ("skip", 3, Rule(match="x", match_in="dump:after_optimizations"), 1, "failed (exit 3)"),
        ("skip", 125, Rule(), 1, None),  # the test's own "cannot test"
        ("good", 0, Rule(), 1, None),
        ("bad", 1, Rule(match="Mismatch"), 1, None),
    ],
)
def test_a_step_with_passes_disabled_that_fails_otherwise_than_the_test_broke_the_program(
    outcome, code, rule, baseline, broken
):
    why = broke_reason(StepOutcome(outcome), code, rule, Baseline(baseline), None)
    assert why == (f"{BROKE}: {broken}" if broken else None)


def test_the_fatal_line_of_a_crash_is_in_the_reason(tmp_path):
    (tmp_path / "stderr.log").write_text(
        "W0000 warning\nF1128 01:18:12.8 28597 cpu_client.cc:1285] Check failed: output_indices_ == -1 "
        "Unexpected duplicate.\n*** Check failure stack trace: ***\n    @ 0x7f absl::LogMessage\n"
    )
    why = broke_reason(StepOutcome.BAD, 134, Rule(), Baseline(1), str(tmp_path))
    assert why.endswith("crashed (SIGABRT, exit 134): Check failed: output_indices_ == -1 Unexpected duplicate.")


def test_an_error_xla_raised_that_the_baseline_did_not_is_a_broken_program(tmp_path):
    # jaxlib 0.10.2 without sharding-remover: a flax model's initialisation fails with exit 1, like the check
    error = "jax.errors.JaxRuntimeError: NOT_FOUND: No registered implementation for untyped custom call to Sharding"
    (tmp_path / "stderr.log").write_text(f"Traceback (most recent call last):\n  ...\n{error} for Host\n-----\n")
    for rule in (Rule(), Rule(bad_exit=(1,))):
        why = broke_reason(StepOutcome.BAD, 1, rule, Baseline(1), str(tmp_path))
        assert why == f"{BROKE}: exit 1 on an error of XLA's that the baseline did not raise: {error} for Host"
    assert broke_reason(StepOutcome.BAD, 1, Rule(), Baseline(1, "JaxRuntimeError: x"), str(tmp_path)) is None
    assert broke_reason(StepOutcome.BAD, 1, Rule(match="Sharding"), Baseline(1), str(tmp_path)) is None


@pytest.mark.parametrize("name", ["", "a,b", " fusion"])
def test_a_pass_option_names_one_pass(name):
    with pytest.raises(UsageError, match="not a pass name") as caught:
        check_pass_names("--exclude-pass", [name])
    assert "repeat the option" in caught.value.hint


def _file(role, path, digest, size=1):
    return TestFile(role=role, path=str(path), sha256=digest, size=size)


def test_a_changed_program_or_argument_file_is_a_changed_test(tmp_path):
    saved = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 60))
    ref, out = tmp_path / "ref.npy", tmp_path / "out.txt"
    ref.write_text("r")
    out.write_text("o")
    os.utime(out, (time.time() - 120, time.time() - 120))  # written by a step, before the state was saved
    before = [_file("program", "check.py", "a"), _file("argument", ref, "r1"), _file("argument", out, "o1")]
    assert changes(before, before, saved) == []
    now = [_file("program", "check.py", "b"), _file("argument", ref, "r2"), _file("argument", out, "o2")]
    assert changes(before, now, saved) == [
        "check.py (program): content differs",
        f"{ref} (argument): content differs",  # edited after the bisection last saved
    ]
    assert changes(before[:1], before, saved) == [f"{ref} (argument): new"]
    assert changes(before, before[:1], saved) == [
        f"{ref} (argument): no longer part of the test",
        f"{out} (argument): no longer part of the test",
    ]


def test_step_detail_keeps_the_exit_status():
    assert StepDetail(exit_code=134).exit_code == 134


def test_a_pass_both_excluded_and_included_is_refused_and_repeats_count_once():
    from xlatools.bisect.api import PassRequest
    from xlatools.bisect.checks import TestOptions

    with pytest.raises(UsageError, match="fusion is given to both --exclude-pass and --include-pass"):
        PassRequest(test=TestOptions(program="p.py"), exclude=("fusion",), include=("fusion",)).options()
    options = PassRequest(test=TestOptions(program="p.py"), exclude=("a", "b", "a")).options()
    assert options == PassOptions(exclude=["a", "b"])
