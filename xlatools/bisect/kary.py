"""K-ary search: `bisect releases --jobs K` tests K candidates at once (pure, driven by an oracle).

Each round cuts the open range (last known good, first known bad) into K+1 near-equal parts and
asks the K cut points together; a batch runner (the driver's: threads) runs the unrecorded ones
concurrently. The first round asks the two ends and K-2 interior points, so a K of 4 over 4
candidates takes one round. With K = 1 it is `engine.bisect_ordered` itself.

The answer is the same as K = 1's for any test that is not flaky: the search stops only when no
untested, unskipped candidate is left between a good and a bad one, so the last good is the
newest testable candidate before the first bad and the first bad the oldest testable one from
it; the skipped candidates between them are `maybe_first_bad`. State semantics are K = 1's:
every step is recorded as it finishes (the batch's others keep running), a resumed search
replays the recorded answers and runs only what is missing, a step never runs twice, and
`--confirm` re-runs the two boundary candidates (one attempt of each at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from xlatools import search
from xlatools.bisect.engine import (
    BisectResult,
    Oracle,
    StepFunction,
    StepVerdict,
    answer,
    bisect_ordered,
    check_end,
    search_result,
)
from xlatools.errors import UsageError
from xlatools.vocab import StepOutcome


@dataclass(frozen=True)
class StepCall:
    """One step to run: its number (the order steps start in), candidate and role."""

    n: int
    key: str
    label: str
    role: str
    attempt: int = 0


# Runs a batch, yielding each call's verdict as it finishes; it raises (after yielding every
# verdict it got) when a step raised.
BatchRunner = Callable[[list[StepCall]], Iterable[tuple[StepCall, StepVerdict]]]


def one_at_a_time(run_step: StepFunction) -> BatchRunner:
    """The batch runner of K = 1 and of tests: each call in order."""

    def run(calls: list[StepCall]) -> Iterable[tuple[StepCall, StepVerdict]]:
        for call in calls:
            yield call, run_step(call.key, call.label)

    return run


def ask_batch(oracle: Oracle, asks: list[tuple[str, str, str, int]], run_batch: BatchRunner) -> list[StepOutcome]:
    """Outcomes of (key, label, role, attempt) asks: recorded ones replayed, the rest run as one batch."""
    answers: dict[int, StepOutcome] = {}
    calls: dict[StepCall, int] = {}
    next_n = max((s.n for s in oracle.steps), default=0) + 1
    for position, (key, label, role, attempt) in enumerate(asks):
        done = oracle.runs(key)
        if len(done) > attempt:
            oracle.replayed += 1
            answers[position] = done[attempt].outcome
        else:
            calls[StepCall(next_n, key, label, role, attempt)] = position
            next_n += 1
    if calls:
        started = oracle.clock()
        for call, verdict in run_batch(list(calls)):
            answers[calls[call]] = oracle.record(
                call.n, call.key, call.label, call.role, call.attempt, verdict, started
            ).outcome
    return [answers[position] for position in range(len(asks))]


def narrow(lo: int, hi: int, skipped: set[int], found: Iterable[tuple[int, StepOutcome]]) -> tuple[int, int]:
    """search.narrow over step outcomes (engine.answer)."""
    return search.narrow(lo, hi, skipped, [(i, answer(outcome)) for i, outcome in found])


def bisect_kary(
    keys: Sequence[str], labels: Sequence[str], oracle: Oracle, run_batch: BatchRunner, jobs: int, confirm: int = 0
) -> BisectResult:
    """First bad candidate of `keys` (oldest first), `jobs` candidates per round."""
    if jobs < 1:
        raise UsageError(f"--jobs {jobs}: must be 1 or more")
    if jobs == 1:
        return bisect_ordered(keys, labels, oracle, confirm)
    n = len(keys)
    if n < 2:
        raise UsageError("a bisection needs at least two candidates (the good and the bad end)")

    def ask(indices: list[int], roles: list[str]) -> list[tuple[int, StepOutcome]]:
        outcomes = ask_batch(oracle, [(keys[i], labels[i], role, 0) for i, role in zip(indices, roles)], run_batch)
        return list(zip(indices, outcomes))

    interior = search.cut_points(0, n - 1, range(1, n - 1), jobs - 2)
    first = ask([0, n - 1, *interior], ["good end", "bad end", *["search"] * len(interior)])
    for (index, outcome), role in zip(first, ("good end", "bad end")):
        check_end(oracle, keys, labels, index, role, outcome)
    skipped: set[int] = set()
    lo, hi = narrow(0, n - 1, skipped, first[2:])
    lo, hi = search.k_ary(
        lo, hi, lambda points: [answer(o) for _, o in ask(points, ["search"] * len(points))], jobs, skipped
    )
    for attempt in range(1, confirm + 1):  # one attempt of each boundary at a time: records stay in attempt order
        ask_batch(oracle, [(keys[i], labels[i], "confirm", attempt) for i in (lo, hi)], run_batch)
    return search_result(oracle, keys, lo, hi, skipped, confirm)
