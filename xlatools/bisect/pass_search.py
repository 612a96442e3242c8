"""`bisect passes`' search, pure: which passes to disable, over a plain `ask(subset, role) -> Answer`.

A step with passes disabled answers one of four things (`Answer`): the test is good, the test is bad
(its own bad), the disabled set broke the program (a crash, or a failure that is not the test's bad:
compilation needs one of those passes), or the step could not be judged at all. Only `good` is
interesting to ddmin; `broke` is never counted as bad.

1. The pool: the candidates, less the passes left enabled (the backend's table, --exclude-pass).
2. Disable the whole pool. Good: go on to 3. Bad: the passes that changed the module in that run and
   were not candidates (they took over: fusion-wrapper does fusion's work when fusion is off) join the
   pool and it is asked again; with none, the difference is not made by these passes. Broke: a binary
   search finds the shortest prefix of the pool (pipeline order) whose disabling breaks the program; its
   last pass is left enabled and named, and the pool is asked again. A prefix seen good on the way is
   taken as the start of 3 at once.
3. Prefix search over the good set S for a 1-minimal set whose disabling turns the test good: a binary
   search finds the shortest prefix of S that, with the passes found so far, is good; its last pass is
   one of the set; then again over the passes before it, until the passes found are good alone. About
   log2(|S|) + 1 steps per pass of the answer: for 3 passes of 8, 11 steps where Zeller's ddmin asks
   24 distinct sets (tests/unit/test_bisect_pass_search.py). With answers that grow with the set (disabling more
   never makes a good set bad), the result is 1-minimal: enabling any one of its passes again is bad.
The answers are deterministic functions of the recorded ones, so a resumed bisection reaches the same
point without running a step twice (bisect/engine.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, Sequence

from xlatools import search
from xlatools.bisect.engine import NoReduction


class Answer(StrEnum):
    GOOD = "good"
    BAD = "bad"
    BROKE = "broke"  # the disabled set breaks the program (crash, another failure): never bad
    SKIP = "skip"  # the step could not be judged (--skip-exit, cannot run here)


Ask = Callable[[tuple[str, ...], str], Answer]  # (passes to disable, role) -> answer
TookOver = Callable[[tuple[str, ...]], list[str]]  # a bad step's disabled set -> passes that changed the module in it


@dataclass
class Found:
    culprits: tuple[str, ...]
    left_enabled: dict[str, str]  # pass -> why it stayed enabled (known, --exclude-pass, seen breaking)
    added: dict[str, str] = field(default_factory=dict)  # pass -> why it became a candidate during the search
    how: str = "prefix search"


def _label(passes: Sequence[str]) -> str:
    return ", ".join(passes)


def search_passes(pool: Sequence[str], left_enabled: dict[str, str], ask: Ask, took_over: TookOver) -> Found:
    """The 1-minimal set of `pool` whose disabling turns the test good (module doc); `left_enabled` grows with
    the passes found breaking the program, which are never disabled."""
    left = dict(left_enabled)
    pool = [p for p in pool if p not in left]
    added: dict[str, str] = {}
    start: list[str] | None = None
    for _ in range(4 * len(pool) + 8):  # every round leaves a pass enabled or adds one: bounded
        if not pool:
            raise NoReduction(
                "no candidate pass is left to disable once these stay enabled: " + _kept(left),
                hint="make a pass a candidate again with --include-pass NAME",
            )
        answer = ask(tuple(pool), "disable all")
        if answer == Answer.GOOD:
            start = pool
            break
        if answer == Answer.SKIP:
            raise NoReduction(
                f"the test could not judge the step that disables all {len(pool)} candidate passes "
                f"({_label(pool)}): see its reason above",
                hint="check the test with --xla-flag=--xla_disable_hlo_passes=... by hand",
            )
        if answer == Answer.BAD:
            new = [p for p in took_over(tuple(pool)) if p not in pool and p not in left]
            if not new:
                raise NoReduction(
                    f"disabling all {len(pool)} candidate passes ({_label(pool)}) still leaves the test bad: the "
                    "difference is not made by one of these HLO passes (look at lowering, codegen or runtime)"
                    + (f"; left enabled: {_kept(left)}" if left else ""),
                    hint="if a pass left enabled may be the culprit, make it a candidate with --include-pass NAME",
                )
            for name in new:
                added[name] = "changed the module once the other candidates were disabled"
            pool += new
            continue
        good: list[list[str]] = []
        k = _first_breaking(pool, ask, good)
        if good:  # a set that compiles and is good: enough to start the search for the answer
            start = good[0]
            break
        keep = pool[k - 1]
        left[keep] = "disabling it breaks the program" + (
            f" (with {_label(pool[: k - 1])} disabled too)" if k > 1 else ""
        )
        pool.remove(keep)
    if start is None:  # pragma: no cover - the bound above is never reached: each round changes the pool
        raise NoReduction("the search for a pass set that the program survives did not end")

    return Found(minimal_good(start, ask), left, added)


def _answers(ask: Ask, role: str, sets: list[list[str]]) -> list[Answer]:
    return [ask(tuple(s), role) for s in sets]


def minimal_good(start: Sequence[str], ask: Ask) -> tuple[str, ...]:
    """A 1-minimal subset of `start` (which is good) whose disabling is good (module doc, 3.). The sets asked
    keep `start`'s order, so a resumed search asks the same keys."""
    found: list[str] = []  # the answer's passes, each after the rest in `start`'s order
    rest = list(start)  # invariant: rest + found is good
    while rest:
        if found and _answers(ask, "search", [found])[0] == Answer.GOOD:
            break
        k = search.smallest_interesting(len(rest), _prefixes_good(ask, rest, found))  # the shortest good prefix
        found = [rest[k - 1], *found]
        rest = rest[: k - 1]
    return tuple(found)


def _prefixes_good(ask: Ask, rest: list[str], found: list[str]) -> Callable[[list[int]], list[bool | None]]:
    """Whether disabling rest[:k] and `found` is good, for each k asked."""

    def good(points: list[int]) -> list[bool | None]:
        answers = _answers(ask, "search", [rest[:k] + found for k in points])
        return [{Answer.GOOD: True, Answer.BAD: False}.get(a) for a in answers]

    return good


def _first_breaking(pool: list[str], ask: Ask, good: list[list[str]]) -> int:
    """The length of the shortest prefix of `pool` whose disabling breaks the program (the whole pool does);
    stops early when a prefix turns out good (appended to `good`)."""

    def breaks(points: list[int]) -> list[bool | None]:
        out: list[bool | None] = []
        for k in points:
            answer = ask(tuple(pool[:k]), "needed")
            if answer == Answer.GOOD:
                good.append(pool[:k])
            out.append({Answer.BROKE: True, Answer.GOOD: False, Answer.BAD: False}.get(answer))
        return out

    return search.smallest_interesting(len(pool), breaks, stop=lambda: bool(good))


def _kept(left: dict[str, str]) -> str:
    return "; ".join(f"{name} ({why})" for name, why in left.items())
