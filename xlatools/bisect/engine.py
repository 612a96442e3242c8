"""The search engine shared by every bisection: pure, driven by an oracle.

An `Oracle` answers "what is the outcome of this candidate?" (`good`, `bad`,
`skip`) from the recorded steps when it has one, else by running the step
function and recording the answer (the caller saves the record atomically
before the next question). Both searches below are deterministic functions of
the answers, so replaying them against the recorded steps after an
interruption reaches the same point without running any step twice: that is
the whole resume mechanism.

- `bisect_ordered`: binary search over an ordered candidate list (oldest
  first) for the first bad candidate, with skips (never counted as good or
  bad, like `git bisect skip`) and `confirm` re-runs of the two boundary steps.
- `ddmin`: delta debugging (Zeller's ddmin) for the smallest set of items whose
  removal turns bad into good; used for HLO passes.
The search procedures themselves (ddmin, the middle of a range) are xlatools/search.py, shared with reduce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from xlatools import search
from xlatools.errors import UsageError, XlaToolsError
from xlatools.records.bisect import StepDetail, StepRecord
from xlatools.records.bisect_metric import MetricRuns
from xlatools.records.build import BazelProcesses
from xlatools.vocab import StepOutcome

__all__ = [
    "BisectResult",
    "EndpointProblem",
    "NoReduction",
    "Oracle",
    "StepRecord",
    "StepVerdict",
    "bisect_ordered",
    "ddmin",
    "ideal_steps",
]


@dataclass(frozen=True)
class StepVerdict:
    """What one step found (the test's answer plus where the evidence is)."""

    outcome: StepOutcome
    reason: str = ""
    bundle: str | None = None
    install_s: float = 0.0
    run_s: float = 0.0
    detail: StepDetail | None = None
    bazel_processes: BazelProcesses | None = None  # the candidate was built: how bazel ran its actions
    metric: MetricRuns | None = None  # a noise-aware metric test: every run's value

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", StepOutcome(self.outcome))  # a plain "good" from a test's step too


StepFunction = Callable[[str, str], StepVerdict]  # (key, label) -> StepVerdict


class Oracle:
    """Answers from the record first, else runs the step and records it (then calls `on_record`)."""

    def __init__(
        self,
        steps: list[StepRecord],
        run_step: StepFunction,
        on_record: Callable[[StepRecord], None],
        clock: Callable[[], str],
    ):
        self.steps = steps
        self.run_step = run_step
        self.on_record = on_record
        self.clock = clock
        self.replayed = 0

    def runs(self, key: str) -> list[StepRecord]:
        return [s for s in self.steps if s.key == key]

    def ask(self, key: str, label: str, role: str, attempt: int = 0) -> StepOutcome:
        done = self.runs(key)
        if len(done) > attempt:
            self.replayed += 1
            return done[attempt].outcome
        started = self.clock()
        verdict = self.run_step(key, label)
        return self.record(len(self.steps) + 1, key, label, role, attempt, verdict, started).outcome

    def record(
        self, n: int, key: str, label: str, role: str, attempt: int, verdict: StepVerdict, started: str
    ) -> StepRecord:
        """Keep one step's answer (and hand it to `on_record`, which saves the state)."""
        record = StepRecord(
            n=n,
            key=key,
            label=label,
            role=role,
            attempt=attempt,
            outcome=verdict.outcome,
            reason=verdict.reason,
            bundle=verdict.bundle,
            install_s=round(verdict.install_s, 3),
            run_s=round(verdict.run_s, 3),
            started=started,
            finished=self.clock(),
            detail=verdict.detail,
            bazel_processes=verdict.bazel_processes,
            metric=verdict.metric,
        )
        self.steps.append(record)
        self.on_record(record)
        return record


class EndpointProblem(UsageError):
    """The given good end is not good, the bad end not bad, or an end cannot be tested: the user must pick others."""


@dataclass
class BisectResult:
    last_good: int  # candidate indices
    first_bad: int
    maybe_first_bad: list[int]  # skipped candidates between them: the first bad may be any of these or first_bad
    confirm: dict[str, list[StepOutcome]]  # "last_good"/"first_bad" -> outcomes of every run (the first included)
    flaky: bool


def check_end(
    oracle: Oracle, keys: Sequence[str], labels: Sequence[str], index: int, role: str, outcome: StepOutcome
) -> None:
    """An end that is not what it claims (or cannot be tested) stops the search (EndpointProblem)."""
    expected, option = (StepOutcome.GOOD, "--good") if role == "good end" else (StepOutcome.BAD, "--bad")
    if outcome == StepOutcome.SKIP:
        last = oracle.runs(keys[index])[0]
        raise EndpointProblem(
            f"the {role} {labels[index]} could not be tested: {last.reason}",
            hint=f"pick another {option} (its step bundle: {last.bundle or 'none'})",
        )
    if outcome != expected:
        other = StepOutcome.BAD if expected == StepOutcome.GOOD else StepOutcome.GOOD
        raise EndpointProblem(
            f"'{expected}' is not {expected}: the test says {labels[index]} ({option}) is {other}",
            hint=f"the test must pass on {labels[0]} and fail on {labels[-1]}; pick another {option} or check the test",
        )


def bisect_ordered(keys: Sequence[str], labels: Sequence[str], oracle: Oracle, confirm: int = 0) -> BisectResult:
    """First bad candidate of `keys` (oldest first). The ends are tested first: a good end that is
    bad, a bad end that is good, or an end that cannot be tested stops the search (EndpointProblem)."""
    n = len(keys)
    if n < 2:
        raise UsageError("a bisection needs at least two candidates (the good and the bad end)")
    for index, role in ((0, "good end"), (n - 1, "bad end")):
        check_end(oracle, keys, labels, index, role, oracle.ask(keys[index], labels[index], role))
    skipped: set[int] = set()

    def middle(points: list[int]) -> list[bool | None]:
        return [answer(oracle.ask(keys[i], labels[i], "search")) for i in points]

    lo, hi = search.k_ary(0, n - 1, middle, 1, skipped)  # one point a round: the middle, ties to the lower
    for index in (lo, hi):
        for attempt in range(1, confirm + 1):
            oracle.ask(keys[index], labels[index], "confirm", attempt)
    return search_result(oracle, keys, lo, hi, skipped, confirm)


def answer(outcome: StepOutcome) -> bool | None:
    """A step's outcome as the search reads it: bad is the interesting side, a skip unresolved."""
    return {StepOutcome.BAD: True, StepOutcome.GOOD: False}.get(outcome)


def search_result(
    oracle: Oracle, keys: Sequence[str], lo: int, hi: int, skipped: set[int], confirm: int
) -> BisectResult:
    """The answer of a finished search whose --confirm re-runs are recorded: their outcomes, and
    whether any disagreed with the first run."""
    seen: dict[str, list[StepOutcome]] = {}
    flaky = False
    for name, index, expected in (("last_good", lo, StepOutcome.GOOD), ("first_bad", hi, StepOutcome.BAD)):
        seen[name] = [r.outcome for r in oracle.runs(keys[index])[: confirm + 1]]
        flaky = flaky or any(o != expected for o in seen[name])
    return BisectResult(lo, hi, sorted(i for i in skipped if lo < i < hi), seen, flaky)


def ideal_steps(n: int) -> int:
    """ceil(log2 N) for the N candidates of a search: what a bisection without skips needs at most
    for the interior, plus the two ends we always test."""
    return math.ceil(math.log2(n)) if n > 1 else 0


class NoReduction(XlaToolsError):
    """ddmin cannot start: removing everything does not turn bad into good."""


def ddmin(items: Sequence[str], interesting: Callable[[tuple[str, ...]], bool | None]) -> tuple[str, ...]:
    """A 1-minimal subset of `items` for which `interesting` is True (None: unresolved, e.g. a skip), one
    question at a time. `interesting(items)` must be True. Subsets keep the original order, so the keys the
    oracle sees are stable across resumed runs."""
    return tuple(search.ddmin(list(items), lambda tries: [interesting(tuple(t)) for t in tries]))
