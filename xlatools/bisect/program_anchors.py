"""Anchors of a noise-aware metric test on one interpreter (bisect flags, bisect passes): the program as it is
(the bad anchor) and, with --good-python, the same program on a good interpreter, measured interleaved;
without one the good anchor is virtual (bisect/noise.py: at least 10 % better, beyond noise)."""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

from xlatools.bisect.anchors import UNMEASURED, Side, interleave, measure_pair, record_side, summary_text
from xlatools.bisect.checks import StepEnv, Test
from xlatools.bisect.engine import EndpointProblem
from xlatools.bisect.metric_test import MetricTest
from xlatools.bisect.noise import AnchorProblem, Anchors
from xlatools.bundle import utc_now
from xlatools.records.bisect_metric import MetricRuns
from xlatools.vocab import StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.driver import Progress
    from xlatools.bisect.engine import Oracle
    from xlatools.bisect.state import State


AS_IS, REFERENCE = "as-is", "reference"  # the anchors' keys in bisect flags and bisect passes


def anchor_program(
    state: State, oracle: Oracle, test: MetricTest, bad: StepEnv, good: StepEnv | None, progress: Progress
) -> Anchors:
    """Anchors for a search on one interpreter (bisect flags, bisect passes): the program as it is (bad) and, when
    given, a reference interpreter (good; interleaved with it). Without a reference the good anchor is virtual:
    at least 10 % better than the program as it is, beyond noise. Recorded (keys as-is, reference) and rebuilt
    from the record; EndpointProblem (exit 2) when they cannot judge."""
    recorded = {s.key: s for s in state.steps if s.key in (AS_IS, REFERENCE) and s.attempt == 0}
    wanted = [AS_IS] + ([REFERENCE] if good is not None else [])
    if not all(k in recorded for k in wanted):
        state.steps[:] = [s for s in state.steps if s.key not in (AS_IS, REFERENCE)]
        base = max((s.n for s in state.steps), default=0)
        sides = [Side(AS_IS, "the program as it is", "baseline", bad, base + 1, MetricRuns(name=test.metric))]
        if good is not None:
            sides.insert(0, Side(REFERENCE, "the reference", "reference", good, base + 2, MetricRuns(name=test.metric)))
            progress(f"the reference (the good anchor): the program on {good.python}")
        progress(f"measuring {' and '.join(s.label for s in sides)} first: {test.repeat} runs each of {test.metric}")
        started = utc_now()
        if len(sides) == 2:
            measure_pair(sides, test, Path(state.folder or ".") / "steps", progress)
        else:
            interleave(sides, test, Path(state.folder or ".") / "steps", range(test.repeat), progress)
        values = [tuple(s.runs.values) for s in sides]
        anchors = Anchors(values[0] if good is not None else (), values[-1], test.lower_is_better)
        problem = next((f"{s.label}{UNMEASURED}{s.failed}" for s in sides if s.failed), None)
        if problem is None:
            try:
                anchors.check()
            except AnchorProblem as exc:
                problem = exc.message.replace("good end", "reference").replace("bad end", "program as it is")
        for side in sides:
            if side.runs.values:
                side.runs.centre, side.runs.spread = median(side.runs.values), anchors.summary(side.runs.values).spread
            outcome = StepOutcome.GOOD if side.key == REFERENCE else StepOutcome.BAD
            reason = problem or f"{test.metric} {summary_text(anchors, side.runs.values)}, {side.role}"
            record_side(oracle, side, StepOutcome.SKIP if problem else outcome, reason, 0, started)
        recorded = {s.key: s for s in state.steps if s.key in (AS_IS, REFERENCE) and s.attempt == 0}
    for key in wanted:
        metric = recorded[key].metric
        if recorded[key].outcome == StepOutcome.SKIP or metric is None or not metric.values:
            raise EndpointProblem(
                recorded[key].reason, hint="check the program on its own, or measure with more runs (--repeat)"
            )
    reference = recorded.get(REFERENCE)
    anchors = Anchors(
        tuple(reference.metric.values) if reference and reference.metric else (),
        tuple(recorded[AS_IS].metric.values),  # type: ignore[union-attr]
        test.lower_is_better,
    )
    test.anchors, test.ends = anchors, (good, bad)
    return anchors


def start_program(
    state: State, oracle: Oracle, test: Test, python: str, good_python: str | None, progress: Progress
) -> None:
    """bisect passes: the anchors first when the test is a noise-aware metric (other tests: nothing)."""
    if isinstance(test, MetricTest):
        anchor_program(state, oracle, test, StepEnv(python), StepEnv(good_python) if good_python else None, progress)
