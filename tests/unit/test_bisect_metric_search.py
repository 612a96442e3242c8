"""A noise-aware metric bisection through the real driver (bisect/driver.run_ordered, bisect/anchors.py), with the
program's run replaced by a plain function of the candidate: anchors first, refusal of ends that do not differ,
the answer, the boundary check, resume without a run twice, an ambiguous step skipped after --max-runs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from xlatools.bisect.checks import StepEnv
from xlatools.bisect.driver import Progress, run_ordered
from xlatools.bisect.engine import EndpointProblem
from xlatools.bisect.metric_test import Measured, MetricTest
from xlatools.bisect.rule import Rule
from xlatools.bisect.state import State, load
from xlatools.console import Reporter
from xlatools.records.bisect import Candidate, ProgramTestSpec, ReleaseSpec, StepDetail
from xlatools.vocab import BisectStatus, StepOutcome


class Source:
    def prepare(self, key: str, label: str) -> StepEnv:
        return StepEnv(key)


class Fake(MetricTest):
    """Candidate i measures values(i) (plus a little seeded noise); every run is counted."""

    def __init__(self, values, noise=0.01, seed=0, **rule):
        super().__init__(inner=type("Inner", (), {"rule": Rule(metric="t", **rule)})())  # type: ignore[arg-type]
        self.values, self.noise, self.rng, self.runs = values, noise, random.Random(seed), []

    def describe(self):  # type: ignore[override]
        return ProgramTestSpec(program="fake")

    def measure(self, step: StepEnv, out_root: Path, name: str) -> Measured:
        i = int(step.python)
        self.runs.append(i)
        return Measured(self.values(i) * (1 + self.rng.gauss(0, self.noise)), str(out_root / name), 0.0, StepDetail())


def bisect(folder: Path, test: Fake, n: int = 8) -> State:
    state = load(folder)
    if state is None:
        folder.mkdir(parents=True)
        spec = ReleaseSpec(good="0", bad=str(n - 1), python_version="3.11", platform="cpu", test=test.describe())
        state = State(
            folder=folder,
            kind="releases",
            spec=spec,
            candidates=[Candidate(key=str(i), label=f"c{i}") for i in range(n)],
        )
        state.save()
    if state.status != BisectStatus.DONE:
        run_ordered(state, Source(), test, 0, Progress(Reporter.silent()))
    return state


def test_the_first_bad_is_found_against_the_anchors_and_a_resume_runs_nothing_again(tmp_path):
    test = Fake(lambda i: 1.3 if i >= 5 else 1.0)
    state = bisect(tmp_path / "b", test)
    answer = state.result
    assert answer is not None and answer.first_bad.key == "5" and answer.last_good.key == "4" and not answer.flaky
    ends = [s for s in state.steps if s.role in ("good end", "bad end")]
    assert [len(s.metric.values) for s in ends] == [5, 5]  # five runs of each end, before any search step
    assert state.steps[0].role == "good end" and state.steps[1].role == "bad end"
    assert answer.metric is not None and answer.metric.ratio == pytest.approx(1.3, rel=0.05)
    assert answer.metric.boundary_differ is True  # 4 and 5 measured again side by side
    assert any("standard errors apart" in line for line in answer.report_lines)
    search = [s for s in state.steps if s.role == "search"]
    assert all(s.metric.references and s.metric.position is not None for s in search)  # a run of an end beside each
    assert all("±" in s.reason and "run" in s.reason for s in state.steps)  # value, spread, runs: every verdict
    runs = len(test.runs)
    again = Fake(lambda i: 1.3 if i >= 5 else 1.0)
    assert bisect(tmp_path / "b", again).result.first_bad.key == "5" and again.runs == [] and runs > 10


def test_equally_slow_ends_are_refused_before_any_search(tmp_path):
    test = Fake(lambda i: 1.0, noise=0.03, seed=3)
    with pytest.raises(EndpointProblem) as refused:
        bisect(tmp_path / "b", test)
    message = refused.value.message
    assert "do not differ beyond noise" in message and message.count("±") == 2 and "Nothing to bisect" in message
    assert set(test.runs) == {0, 7}  # the two ends only
    state = load(tmp_path / "b")
    assert state.status == BisectStatus.STOPPED and state.result is None
    assert {s.outcome for s in state.steps} == {StepOutcome.SKIP}
    again = Fake(lambda i: 1.0, noise=0.03, seed=3)
    with pytest.raises(EndpointProblem):  # refused again from the record: nothing measured twice
        bisect(tmp_path / "b", again)
    assert again.runs == []


def test_exact_metrics_stop_after_three_rounds_and_need_no_reference_runs(tmp_path):
    test = Fake(lambda i: 84.7e6 if i >= 3 else 13.4e6, noise=0.0)
    state = bisect(tmp_path / "b", test)
    assert state.result.first_bad.key == "3"
    assert [len(s.metric.values) for s in state.steps[:2]] == [3, 3]
    assert all(len(s.metric.values) == 1 and not s.metric.references for s in state.steps[2:])
    assert state.result.metric.exact and state.result.metric.boundary == []  # nothing to measure again


def test_a_step_that_stays_between_the_anchors_is_skipped_after_max_runs(tmp_path):
    middle = 1.0 * 1.3**0.5
    test = Fake(lambda i: 1.3 if i >= 5 else middle if i == 3 else 1.0, noise=0.002, max_runs=4)
    state = bisect(tmp_path / "b", test)
    step = next(s for s in state.steps if s.key == "3")
    assert step.outcome == StepOutcome.SKIP and "still ambiguous after 4 runs" in step.reason
    assert len(step.metric.values) == 4
    assert state.result.first_bad.key == "5"  # the search went round it


def test_jobs_measure_candidates_side_by_side_to_the_same_answer(tmp_path):
    folder = tmp_path / "b"
    folder.mkdir()
    test = Fake(lambda i: 1.3 if i >= 5 else 1.0)
    spec = ReleaseSpec(good="0", bad="7", python_version="3.11", platform="cpu", test=test.describe())
    state = State(
        folder=folder, kind="releases", spec=spec, candidates=[Candidate(key=str(i), label=f"c{i}") for i in range(8)]
    )
    state.save()
    run_ordered(state, Source(), test, 0, Progress(Reporter.silent()), jobs=3)
    assert state.result.first_bad.key == "5" and not state.result.flaky
    assert [s.role for s in state.steps[:2]] == ["good end", "bad end"]  # the ends first, on their own
