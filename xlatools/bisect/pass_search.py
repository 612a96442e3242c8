"""`bisect passes`' search, pure: which passes to disable, over a plain `ask(subset, role) -> Answer`.

A step with passes disabled answers one of four things (`Answer`): the test is good, the test is bad
(its own bad), the disabled set broke the program (a crash, or a failure that is not the test's bad:
compilation needs one of those passes), or the step could not be judged at all. Only `good` answers
the search; `broke` is never counted as bad.

1. The pool: the candidates, less the passes left enabled (the backend's table, --exclude-pass).
2. Disable the whole pool. Good: go on to 3. Bad: the passes that changed the module in that run and
   were not candidates (they took over: fusion-wrapper does fusion's work when fusion is off) join the
   pool and it is asked again; with none, the difference is not made by these passes. Broke: the
   prefix search of 3, asked "does it break?", finds a minimal set of passes whose disabling breaks the
   program: one pass (copy-insertion) is left enabled; of a set that breaks only together (layout-
   assignment with fusion-wrapper), the first whose enabling lets the rest be disabled without a break
   or a bad test. Either is named with the reason and the pool asked again. A set seen good on the way
   is taken as the start of 3 at once.
3. Prefix search over the good set S for a 1-minimal set whose disabling turns the test good: a binary
   search finds the shortest prefix of S that, with the passes found so far, is good; its last pass is
   one of the set; then again over the passes before it, until the passes found are good alone. About
   log2(|S|) + 1 steps per pass of the answer: for 3 passes of 8, 11 steps where Zeller's ddmin asks
   24 distinct sets (tests/unit/test_bisect_pass_search.py). With answers that grow with the set
   (disabling more never makes a good set bad), the result is 1-minimal: enabling any one of its
   passes again is bad.
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
# How the two questions read an answer: True holds, False does not, None cannot tell.
_GOOD = {Answer.GOOD: True, Answer.BAD: False}
_BROKE = {Answer.BROKE: True, Answer.GOOD: False, Answer.BAD: False}


@dataclass
class Found:
    culprits: tuple[str, ...]
    left_enabled: dict[str, str]  # pass -> why it stayed enabled (known, --exclude-pass, seen breaking)
    added: dict[str, str] = field(default_factory=dict)  # pass -> why it became a candidate during the search
    how: str = "prefix search"


def _label(passes: Sequence[str]) -> str:
    return ", ".join(passes)


class _Search:
    def __init__(self, pool: Sequence[str], left: dict[str, str], ask: Ask, took_over: TookOver):
        self.left = dict(left)
        self.pool = [p for p in pool if p not in self.left]
        self.ask, self.took_over = ask, took_over
        self.added: dict[str, str] = {}
        self.good: list[list[str]] = []  # sets seen good while looking for what breaks the program

    def start(self) -> list[str]:
        """A set of candidates whose disabling is good (module doc, 2.)."""
        for _ in range(4 * len(self.pool) + 8):  # every round leaves a pass enabled or adds one: bounded
            if not self.pool:
                raise NoReduction(
                    "no candidate pass is left to disable once these stay enabled: " + _kept(self.left),
                    hint="make a pass a candidate again with --include-pass NAME",
                )
            answer = self.ask(tuple(self.pool), "disable all")
            if answer == Answer.GOOD:
                return self.pool
            if answer == Answer.SKIP:
                raise NoReduction(
                    f"the test could not judge the step that disables all {len(self.pool)} candidate passes "
                    f"({_label(self.pool)}): see its reason above",
                    hint="check the test with --xla-flag=--xla_disable_hlo_passes=... by hand",
                )
            if answer == Answer.BAD:
                self._take_over()
                continue
            good = self._leave_breaker_enabled()
            if good is not None:
                return good
        raise NoReduction("the search for a pass set that the program survives did not end")  # pragma: no cover

    def _take_over(self) -> None:
        new = [p for p in self.took_over(tuple(self.pool)) if p not in self.pool and p not in self.left]
        if not new:
            raise NoReduction(
                f"disabling all {len(self.pool)} candidate passes ({_label(self.pool)}) still leaves the test "
                "bad: the difference is not made by one of these HLO passes (look at lowering, codegen or runtime)"
                + (f"; left enabled: {_kept(self.left)}" if self.left else ""),
                hint="if a pass left enabled may be the culprit, make it a candidate with --include-pass NAME",
            )
        for name in new:
            self.added[name] = "changed the module once the other candidates were disabled"
        self.pool += new

    def _leave_breaker_enabled(self) -> list[str] | None:
        """Disabling the pool breaks the program: leave enabled a pass of a minimal set that breaks it; a set
        seen good on the way is returned (the start of the search for the answer)."""
        breaking = minimal_set(self.pool, self.ask, "needed", _BROKE, self.good)
        if self.good:
            return self.good[0]
        if len(breaking) == 1:
            self._leave(breaking[0], "disabling it breaks the program")
            return None
        for name in breaking:  # breaks only together: the first whose enabling lets the rest go
            rest = [p for p in self.pool if p != name]
            answer = self.ask(tuple(rest), "disable all")
            if answer in (Answer.GOOD, Answer.BROKE):
                others = [p for p in breaking if p != name]
                self._leave(name, f"disabling it together with {_label(others)} breaks the program")
                return rest if answer == Answer.GOOD else None
        self._leave(breaking[0], f"disabling it together with {_label(breaking[1:])} breaks the program")
        return None

    def _leave(self, name: str, why: str) -> None:
        self.left[name] = why
        self.pool.remove(name)


def search_passes(pool: Sequence[str], left_enabled: dict[str, str], ask: Ask, took_over: TookOver) -> Found:
    """The 1-minimal set of `pool` whose disabling turns the test good (module doc); `left_enabled` grows with
    the passes found breaking the program, which are never disabled."""
    state = _Search(pool, left_enabled, ask, took_over)
    start = state.start()
    return Found(tuple(minimal_set(start, ask, "search", _GOOD)), state.left, state.added)


def minimal_good(start: Sequence[str], ask: Ask) -> tuple[str, ...]:
    """A 1-minimal subset of `start` (which is good) whose disabling is good (module doc, 3.)."""
    return tuple(minimal_set(start, ask, "search", _GOOD))


def minimal_set(
    start: Sequence[str], ask: Ask, role: str, reads: dict[Answer, bool], good: list[list[str]] | None = None
) -> list[str]:
    """A 1-minimal subset of `start` for which the question `reads` holds (it holds for `start`), by the prefix
    search of the module doc. The sets asked keep `start`'s order, so a resumed search asks the same keys.
    With `good`, sets answered good are appended to it and the search stops at the first."""
    stop = (lambda: bool(good)) if good is not None else search.never
    found: list[str] = []  # the answer's passes, each after the rest in `start`'s order
    rest = list(start)  # invariant: the question holds for rest + found
    while rest and not stop():
        if found and _holds(ask, role, reads, good, [found])[0] is True:
            break
        k = search.smallest_interesting(len(rest), _prefixes(ask, role, reads, good, rest, found), stop=stop)
        found = [rest[k - 1], *found]
        rest = rest[: k - 1]
    return found


def _holds(
    ask: Ask, role: str, reads: dict[Answer, bool], good: list[list[str]] | None, sets: list[list[str]]
) -> list[bool | None]:
    out: list[bool | None] = []
    for s in sets:
        answer = ask(tuple(s), role)
        if good is not None and answer == Answer.GOOD:
            good.append(s)
        out.append(reads.get(answer))
    return out


def _prefixes(
    ask: Ask, role: str, reads: dict[Answer, bool], good: list[list[str]] | None, rest: list[str], found: list[str]
) -> Callable[[list[int]], list[bool | None]]:
    """Whether the question holds for rest[:k] + found, for each k asked."""
    return lambda points: _holds(ask, role, reads, good, [rest[:k] + found for k in points])


def _kept(left: dict[str, str]) -> str:
    return "; ".join(f"{name} ({why})" for name, why in left.items())
