"""The anchors of a noise-aware metric bisection (bisect/noise.py): both ends measured before any search,
interleaved (good, bad, bad, good, ...) so that a change of load hits both; and at the end the boundary
(last good, first bad) measured again, side by side, the same way, so that the answer never rests on
measurements taken far apart in time.

Both are recorded in the state like steps (roles `good end`, `bad end`, `verify`) with every run's value,
so a resumed bisection rebuilds the anchors from the record and runs nothing twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Sequence

from xlatools.bisect.checks import SkipStep, StepEnv, Test
from xlatools.bisect.engine import EndpointProblem, StepVerdict
from xlatools.bisect.metric_test import MIN_EXACT_ROUNDS, MetricTest, fill, run_name
from xlatools.bisect.noise import AnchorProblem, Anchors
from xlatools.bisect.samples import MetricMissing
from xlatools.bundle import safe_name, utc_now
from xlatools.records.bisect import StepDetail, StepRecord
from xlatools.records.bisect_metric import MetricAnswer, MetricRuns
from xlatools.vocab import StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.driver import Progress, Source
    from xlatools.bisect.engine import BisectResult, Oracle
    from xlatools.bisect.state import State


UNMEASURED = " could not be measured: "  # in the reason of an end that gave no value
LEANING = 0.75  # share of pairs in the expected order that earns ends not yet apart one more batch of rounds


@dataclass
class Side:
    """One candidate measured in interleaved rounds."""

    key: str
    label: str
    role: str
    env: StepEnv
    n: int  # its step number (bundle names)
    runs: MetricRuns
    detail: StepDetail | None = None
    seconds: float = 0.0
    failed: str | None = None


def prepare(source: Source, key: str, label: str) -> StepEnv:
    try:
        return source.prepare(key, label)
    except SkipStep as skip:
        raise MetricMissing(skip.reason) from None


def interleave(
    sides: list[Side], test: MetricTest, steps_root: Path, rounds: range, progress: Progress, exact_stop: bool = True
) -> None:
    """One run of each side per round, alternating the order each round; stops early when a side fails, or
    after MIN_EXACT_ROUNDS rounds when every side gave one identical value each time (an exact metric)."""
    for r in rounds:
        order = sides if r % 2 == 0 else sides[::-1]
        for side in order:
            name = f"step{side.n:02d}-{safe_name(side.label)}"
            try:
                got = test.measure(side.env, steps_root, run_name(name, r))
            except MetricMissing as exc:
                side.failed = exc.reason
                return
            side.runs.values.append(got.value)
            side.runs.bundles.append(got.bundle)
            side.detail, side.seconds = got.detail, side.seconds + got.seconds
        values = "; ".join(f"{s.label} {s.runs.values[-1]:.4g}" for s in sides)
        progress(f"{test.metric}, round {r + 1}/{rounds.stop} ({' then '.join(s.label for s in order)}): {values}")
        if exact_stop and r + 1 >= MIN_EXACT_ROUNDS and all(len(set(s.runs.values)) == 1 for s in sides):
            progress(f"{test.metric}: every run gave the same value on each side (an exact metric): enough rounds")
            return


def measure_pair(sides: list[Side], test: MetricTest, steps_root: Path, progress: Progress) -> None:
    """`repeat` interleaved rounds; when the two do not differ beyond noise yet but lean that way (the worse side
    worse in LEANING of the pairs), `repeat` rounds more, once."""
    repeat = test.repeat
    interleave(sides, test, steps_root, range(repeat), progress)
    if any(s.failed for s in sides) or len(sides[0].runs.values) < repeat:
        return  # failed, or exact (stopped early)
    anchors = Anchors(tuple(sides[0].runs.values), tuple(sides[1].runs.values), test.lower_is_better)
    gap, share = anchors.separation()
    if not anchors.differ() and gap > 0 and share >= LEANING:
        progress(
            f"{test.metric}: {sides[0].label} and {sides[1].label} lean apart ({gap:.1f} standard errors, "
            f"{100 * share:.0f}% of pairs) but not beyond noise yet: {repeat} rounds more"
        )
        interleave(sides, test, steps_root, range(repeat, 2 * repeat), progress, exact_stop=False)


def record_side(oracle: Oracle, side: Side, outcome: StepOutcome, reason: str, attempt: int, started: str) -> None:
    verdict = StepVerdict(
        outcome,
        reason,
        side.runs.bundles[0] if side.runs.bundles else None,
        side.env.install_s,
        side.seconds,
        side.detail,
        metric=side.runs,
    )
    oracle.record(side.n, side.key, side.label, side.role, attempt, verdict, started)


def summary_text(anchors: Anchors, values: Sequence[float]) -> str:
    return anchors.summary(values).text()


def ensure_anchors(state: State, oracle: Oracle, source: Source, test: MetricTest, progress: Progress) -> Anchors:
    """The ends' runs (recorded, or measured now and recorded), checked: EndpointProblem (exit 2) when an end cannot be
    measured, the ends are in the wrong order, or they do not differ beyond noise."""
    ends = (state.candidates[0], state.candidates[-1])
    recorded = [next((s for s in state.steps if s.key == c.key and s.attempt == 0), None) for c in ends]
    if all(r is not None for r in recorded):
        return _checked(recorded, test)  # type: ignore[arg-type]
    if any(r is not None for r in recorded):  # killed between the two records: measure both again
        state.steps[:] = [s for s in state.steps if s.key not in (ends[0].key, ends[1].key)]
    base = max((s.n for s in state.steps), default=0)
    sides = []
    for i, (candidate, role) in enumerate(zip(ends, ("good end", "bad end"))):
        progress(f"step {base + i + 1}: {candidate.label}: preparing ({role}, measured {test.repeat} times)")
        failed: str | None = None
        try:
            env = prepare(source, candidate.key, candidate.label)
        except MetricMissing as exc:
            env, failed = StepEnv(""), exc.reason
        sides.append(Side(candidate.key, candidate.label, role, env, base + i + 1, MetricRuns(name=test.metric)))
        sides[-1].failed = failed
    started = utc_now()
    if not any(s.failed for s in sides):
        progress(f"measuring the two ends first, interleaved: {test.repeat} runs each of {test.metric}")
        measure_pair(sides, test, Path(state.folder or ".") / "steps", progress)
    anchors = Anchors(tuple(sides[0].runs.values), tuple(sides[1].runs.values), test.lower_is_better)
    problem = next((f"the {s.role} {s.label}{UNMEASURED}{s.failed}" for s in sides if s.failed), None)
    if problem is None:
        try:
            anchors.check()
        except AnchorProblem as exc:
            problem = exc.message
    for side, outcome in zip(sides, (StepOutcome.GOOD, StepOutcome.BAD)):
        if side.runs.values:
            side.runs.centre, side.runs.spread = median(side.runs.values), anchors.summary(side.runs.values).spread
            side.runs.relative = anchors.log
        reason = problem or f"{test.metric} {summary_text(anchors, side.runs.values)}, {side.role}"
        record_side(oracle, side, StepOutcome.SKIP if problem else outcome, reason, 0, started)
    return _checked([oracle.runs(c.key)[0] for c in ends], test)


def _checked(records: Sequence[StepRecord], test: MetricTest) -> Anchors:
    """The anchors from the ends' records, or EndpointProblem (exit 2): an end that could not be measured, ends in
    the wrong order, ends that do not differ beyond noise (the message quotes both with their spread)."""
    good, bad = records
    for record, option in ((good, "--good"), (bad, "--bad")):
        if record.metric is None or not record.metric.values or UNMEASURED in record.reason:
            raise EndpointProblem(
                record.reason
                if UNMEASURED in record.reason
                else f"the {record.role} {record.label}{UNMEASURED}{record.reason}",
                hint=f"pick another {option}, or check the program on its own (step bundles under {Path(record.bundle or '.').parent})",
            )
    anchors = Anchors(tuple(good.metric.values), tuple(bad.metric.values), test.lower_is_better)  # type: ignore[union-attr]
    try:
        anchors.check()
    except AnchorProblem as exc:
        raise EndpointProblem(exc.message, hint=exc.hint) from None
    return anchors


def verify_boundary(
    state: State, oracle: Oracle, source: Source, test: MetricTest, lo: int, hi: int, progress: Progress
) -> tuple[MetricRuns, MetricRuns] | None:
    """Last good and first bad measured again, interleaved (`repeat` runs each); None when there is no need: an
    exact metric, or the boundary is the two ends (they were measured that way)."""
    anchors = test.anchors
    assert anchors is not None
    if anchors.exact or (lo, hi) == (0, len(state.candidates) - 1):
        return None
    pair = (state.candidates[lo], state.candidates[hi])
    done = [next((s for s in state.steps if s.key == c.key and s.role == "verify"), None) for c in pair]
    lo_done, hi_done = (d.metric if d is not None else None for d in done)
    if lo_done is not None and hi_done is not None:
        return lo_done, hi_done
    base = max((s.n for s in state.steps), default=0)
    progress(
        f"measuring the boundary again, side by side: {pair[0].label} and {pair[1].label}, {test.repeat} runs each"
    )
    sides = []
    for i, candidate in enumerate(pair):
        try:
            env = prepare(source, candidate.key, candidate.label)
        except MetricMissing as exc:
            progress(f"{candidate.label}: cannot measure the boundary again: {exc.reason}")
            return None
        sides.append(Side(candidate.key, candidate.label, "verify", env, base + i + 1, MetricRuns(name=test.metric)))
    started = utc_now()
    t0 = time.monotonic()
    measure_pair(sides, test, Path(state.folder or ".") / "steps", progress)
    for side in sides:
        if side.runs.values:
            judged = anchors.judge(side.runs.values)
            fill(side.runs, judged)
            outcome = {"good": StepOutcome.GOOD, "bad": StepOutcome.BAD}.get(judged.verdict, StepOutcome.SKIP)
            reason = side.failed or f"{test.metric} {judged.summary.text()}: {judged.verdict} (measured again)"
        else:
            outcome, reason = StepOutcome.SKIP, side.failed or "no run"
        record_side(oracle, side, outcome, reason, len(oracle.runs(side.key)), started)
    progress(f"boundary measured again in {time.monotonic() - t0:.1f} s")
    if any(s.failed for s in sides):
        return None
    return sides[0].runs, sides[1].runs


def metric_answer(
    state: State, test: MetricTest, boundary: tuple[MetricRuns, MetricRuns] | None
) -> tuple[MetricAnswer, list[str]]:
    """The answer's metric part and the lines printed under it."""
    anchors = test.anchors
    assert anchors is not None
    good, bad = (
        next(s for s in state.steps if s.key == c.key and s.attempt == 0)
        for c in (state.candidates[0], state.candidates[-1])
    )
    gap, share = anchors.separation()
    ratio = median(anchors.bad) / median(anchors.good) if median(anchors.good) else None
    answer = MetricAnswer(
        name=test.metric,
        good=good.metric or MetricRuns(name=test.metric),
        bad=bad.metric or MetricRuns(name=test.metric),
        gap_se=None if anchors.exact else round(gap, 2),
        pairs_worse=round(share, 3),
        exact=anchors.exact,
        ratio=round(ratio, 4) if ratio else None,
    )
    apart = (
        "exact values"
        if anchors.exact
        else f"{gap:.1f} standard errors apart, bad worse in {100 * share:.0f}% of pairs"
    )
    lines = [
        f"{test.metric}: good end {good.label} {summary_text(anchors, anchors.good)}, bad end {bad.label} "
        f"{summary_text(anchors, anchors.bad)}" + (f": {ratio:.3g}x" if ratio else "") + f" ({apart})"
    ]
    if boundary is not None:
        lo, hi = boundary
        differ = Anchors(tuple(lo.values), tuple(hi.values), test.lower_is_better).differ()
        answer.boundary, answer.boundary_differ = [lo, hi], differ
        lines.append(
            f"boundary measured again side by side: {summary_text(anchors, lo.values)} vs {summary_text(anchors, hi.values)}: "
            + ("they differ beyond noise" if differ else "NOT different beyond noise: do not trust this answer")
        )
    runs = [len(s.metric.values) for s in state.steps if s.metric is not None]
    lines.append(f"{sum(runs)} runs of the program in {len(runs)} steps (ends, search, boundary)")
    return answer, lines


def start(state: State, oracle: Oracle, source: Source, test: Test, progress: Progress, jobs: int) -> None:
    """--metric without --threshold: the ends measured first, before any search step (other tests: nothing)."""
    if not isinstance(test, MetricTest):
        return
    test.anchors = ensure_anchors(state, oracle, source, test, progress)
    if not test.anchors.exact:  # each step's runs get runs of the ends beside them (the drift)
        try:
            good, bad = (prepare(source, c.key, c.label) for c in (state.candidates[0], state.candidates[-1]))
        except MetricMissing as exc:
            raise EndpointProblem(f"an end cannot be prepared again: {exc.reason}") from None
        test.ends = (good, bad)
    if jobs > 1 and not test.anchors.exact:
        progress(
            f"note: {test.metric} varies from run to run and --jobs {jobs} runs steps side by side, which disturbs "
            "timings; --jobs 1 measures one program at a time"
        )


def finish(state: State, oracle: Oracle, source: Source, test: Test, result: BisectResult, progress: Progress) -> None:
    """The boundary measured again side by side, and the metric's numbers into the answer (not trusted: flaky)."""
    if not isinstance(test, MetricTest):
        return
    boundary = verify_boundary(state, oracle, source, test, result.last_good, result.first_bad, progress)
    answer, lines = metric_answer(state, test, boundary)
    assert state.result is not None
    state.result.metric = answer
    state.result.report_lines = [*lines, *state.result.report_lines]
    if answer.boundary_differ is False:
        state.result.flaky = True
