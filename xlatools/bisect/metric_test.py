"""`--metric NAME` without `--threshold`: a program test judged against measured anchors (bisect/noise.py).

`MetricTest` runs the program like `ProgramTest` (a run bundle per run) and takes one value per run
(bisect/samples.run_value). A step runs once, and again while its verdict is ambiguous, up to
`max_runs` runs; still ambiguous then, it is a skip that says so. Unless the metric is exact, each
run of a step has a run of one end beside it (good and bad in turn): the load of the machine then,
against the anchors measured at the start, is taken out of the step's values (a machine that got
faster or slower during the bisection does not move a step to the other side). A run that fails
(non-zero exit), or reports no value, says nothing about speed or size: the step is a skip with the
reason. Every verdict quotes the value, its spread and the number of runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bisect.checks import ProgramTest, StepEnv
from xlatools.bisect.engine import StepVerdict
from xlatools.bisect.noise import Anchors, Judged
from xlatools.bisect.samples import MetricMissing, run_value
from xlatools.errors import UsageError
from xlatools.records.bisect import StepDetail
from xlatools.records.bisect_metric import MetricRuns
from xlatools.vocab import StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.rule import Rule
    from xlatools.records.bisect import ProgramTestSpec

DEFAULT_REPEAT = 5  # runs of each end (interleaved); an exact metric stops after 3
DEFAULT_MAX_RUNS = 7  # runs of one step before an ambiguous one is skipped
MIN_EXACT_ROUNDS = 3


@dataclass(frozen=True)
class Measured:
    value: float
    bundle: str
    seconds: float
    detail: StepDetail


def run_name(name: str, attempt: int) -> str:
    """The bundle name of run `attempt` (0-based) of a step."""
    return name if attempt == 0 else f"{name}-r{attempt + 1}"


@dataclass
class MetricTest:
    """A ProgramTest whose verdict is the metric's position between the anchors (set before the search)."""

    inner: ProgramTest
    anchors: Anchors | None = None
    # the good and bad ends' environments, for the reference runs (no good one: a single anchor, bisect flags/passes)
    ends: tuple[StepEnv | None, StepEnv] | None = None

    @property
    def rule(self) -> Rule:
        return self.inner.rule

    @property
    def program(self):
        return self.inner.program

    @property
    def opts(self):  # what bisect/testfiles.py reads of a program test
        return self.inner.opts

    @property
    def metric(self) -> str:
        assert self.rule.metric is not None
        return self.rule.metric

    @property
    def lower_is_better(self) -> bool:
        return not self.rule.higher_is_better

    @property
    def repeat(self) -> int:
        return self.rule.repeat or DEFAULT_REPEAT

    @property
    def max_runs(self) -> int:
        return self.rule.max_runs or DEFAULT_MAX_RUNS

    def describe(self) -> ProgramTestSpec:
        return self.inner.describe()

    def measure(self, step: StepEnv, out_root: Path, name: str) -> Measured:
        """One run and its value; MetricMissing (with the bundle in the reason) when it gives none."""
        record, seconds = self.inner.execute(step, out_root, name)
        bundle = str(record.bundle)
        code = record.exit_code
        if code in self.rule.skip_exit:
            raise MetricMissing(f"exit {code} means skip ({Path(bundle).name})")
        if code != 0:
            raise MetricMissing(f"the program failed (exit {code}): no measurement ({Path(bundle).name})")
        try:
            value, _ = run_value(record, Path(bundle), self.metric, self.lower_is_better)
        except MetricMissing as exc:
            raise MetricMissing(f"{exc.reason} ({Path(bundle).name})") from None
        detail = StepDetail(exit_code=code, jax=record.jax.jax, jaxlib=record.jax.jaxlib)
        return Measured(value, bundle, seconds, detail)

    def check(self, step: StepEnv, out_root: Path, name: str) -> StepVerdict:
        """Run until the verdict is clear or `max_runs` runs are done. Unless the metric is exact, each run of the
        step is paired with a run of one end (good, bad, good, ...; the order alternates too): how far that end
        is from its anchor value now is the machine's drift, taken out of the step's values."""
        anchors = self.anchors
        if anchors is None:
            raise UsageError("internal: a metric step before its anchors were measured")
        runs = MetricRuns(name=self.metric)
        seconds, detail, judged = 0.0, None, None
        t0 = time.monotonic()
        for attempt in range(self.max_runs):
            try:
                reference = self._reference(attempt, out_root, name) if attempt % 2 else None
                got = self.measure(step, out_root, run_name(name, attempt))
                if reference is None:
                    reference = self._reference(attempt, out_root, name)
            except MetricMissing as exc:
                return StepVerdict(
                    StepOutcome.SKIP, exc.reason, runs.bundles[0] if runs.bundles else None, step.install_s,
                    time.monotonic() - t0, detail, metric=runs if runs.values else None,
                )  # fmt: skip
            runs.values.append(got.value)
            runs.bundles.append(got.bundle)
            if reference is not None:
                runs.references.append(reference)
            detail, seconds = got.detail, seconds + got.seconds
            judged = anchors.judge(runs.values, self._drifts(runs.references))
            fill(runs, judged)
            if judged.verdict != "ambiguous":
                break
        assert judged is not None
        outcome = {"good": StepOutcome.GOOD, "bad": StepOutcome.BAD}.get(judged.verdict, StepOutcome.SKIP)
        reason = f"{self.metric} {judged.summary.text()}: {judged.verdict}, {judged.text()}"
        if outcome == StepOutcome.SKIP:
            reason = f"{self.metric} {judged.summary.text()}: still ambiguous after {len(runs.values)} runs " \
                f"(--max-runs), {judged.text()}: skip"  # fmt: skip
        return StepVerdict(outcome, reason, runs.bundles[0], step.install_s, seconds, detail, metric=runs)

    def _reference(self, attempt: int, out_root: Path, name: str) -> float | None:
        """One run of an end beside run `attempt` of a step (good for even attempts, bad for odd), or None when the
        metric is exact (nothing drifts) or the ends' environments are not known (a step checked on its own)."""
        if self.anchors is None or self.anchors.exact or self.ends is None:
            return None
        which = attempt % 2 if self.ends[0] is not None else 1
        label = ("good", "bad")[which]
        env = self.ends[which]
        assert env is not None
        try:
            return self.measure(env, out_root, f"{name}-{label}-end-r{attempt + 1}").value
        except MetricMissing as exc:
            raise MetricMissing(f"the {label} end, measured again beside this step: {exc.reason}") from None

    def _drifts(self, references: list[float]) -> list[float]:
        """How far each reference run is from its end's anchor value, in the anchors' scale."""
        anchors = self.anchors
        assert anchors is not None
        if not references or self.ends is None:
            return []
        two = self.ends[0] is not None
        return [anchors.t(v) - (anchors.g if two and i % 2 == 0 else anchors.b) for i, v in enumerate(references)]


def fill(runs: MetricRuns, judged: Judged) -> None:
    """The record's summary fields from a verdict."""
    runs.centre, runs.spread, runs.relative = judged.summary.centre, judged.summary.spread, judged.summary.relative
    runs.position, runs.margin = round(judged.position, 4), round(judged.margin, 4)
    runs.drift = round(judged.drift, 5) if runs.references else None


def wrap(test: ProgramTest) -> ProgramTest | MetricTest:
    """The test a rule asks for: noise-aware when it has a metric and no threshold."""
    rule = test.rule
    if rule.metric is not None and rule.threshold is None:
        return MetricTest(test)
    return test
