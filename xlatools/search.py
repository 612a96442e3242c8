"""The search procedures of bisect and reduce, over plain callables (pure: no process, no record, no clock).

Hooks both callers need:
- `test(tries)` answers a batch of candidates at once (True: interesting, i.e. still failing; False: not;
  None: unresolved, e.g. a step that could not be tested), so a caller may run a batch side by side (--jobs);
- `batch`: how many candidates one call gets; `stop()`: asked between batches (a time limit, Ctrl-C).
The answers are deterministic functions of the tests' answers, so bisect's resume (replaying recorded
answers) reaches the same point without running any step twice.

- `ddmin`: Zeller's delta debugging, a 1-minimal sublist that is still interesting (HLO passes for
  `bisect passes`; outputs and instructions for `reduce`).
- `cut_points` / `narrow`: the K-ary split of an ordered range between a known good and a known bad index
  (`bisect releases --jobs K`, and K = 1's middle), and `smallest_interesting` / `largest_interesting` built
  on them for monotone questions over counts (`reduce`'s prefix cuts).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence, TypeVar

T = TypeVar("T")
Answers = Sequence[bool | None]  # one per try: True interesting, False not, None skip (covariant: list[bool] fits)


def never() -> bool:
    return False


def split(items: Sequence[T], parts: int) -> list[list[T]]:
    """`items` in `parts` consecutive, near-equal, non-empty chunks (the first ones one longer)."""
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        if end > start:
            out.append(list(items[start:end]))
        start = end
    return out


def first_interesting(
    tries: list, test: Callable[[list], Answers], batch: int = 1, stop: Callable[[], bool] = never
) -> int | None:
    """Index of the first try (in order) that `test` finds interesting, asked `batch` at a time."""
    for start in range(0, len(tries), batch):
        if stop():
            return None
        for offset, answer in enumerate(test(tries[start : start + batch])):
            if answer is True:
                return start + offset
    return None


def ddmin(
    items: Sequence[T], test: Callable[[list[list[T]]], Answers], batch: int = 1, stop: Callable[[], bool] = never
) -> list[T]:
    """A 1-minimal sublist of `items` for which the test holds (the whole list must hold).

    Subsets first, then complements (at two chunks a complement is the other subset, asked already);
    the first interesting one in order is taken. Sublists keep the original order."""
    current = list(items)
    granularity = 2
    while len(current) >= 2 and not stop():
        chunks = split(current, granularity)
        complements = [[x for other in chunks if other is not chunk for x in other] for chunk in chunks]
        tries = chunks + (complements if granularity > 2 else [])
        found = first_interesting(tries, test, batch, stop)
        if found is not None:
            current = tries[found]
            granularity = 2 if found < len(chunks) else max(granularity - 1, 2)
            continue
        if granularity >= len(current):
            break
        granularity = min(len(current), granularity * 2)
    return current


def cut_points(lo: int, hi: int, usable: Sequence[int], k: int) -> list[int]:
    """K usable indices cutting (lo, hi) into K+1 near-equal parts (all of them when there are no more);
    for K = 1 the one closest to the middle, ties to the lower."""
    left = list(usable)
    if len(left) <= k:
        return left
    chosen = []
    for j in range(1, k + 1):
        target = lo + (hi - lo) * j / (k + 1)
        best = min(left, key=lambda i: (abs(i - target), i))
        chosen.append(best)
        left.remove(best)
    return sorted(chosen)


def narrow(lo: int, hi: int, skipped: set[int], found: Iterable[tuple[int, bool | None]]) -> tuple[int, int]:
    """The open range (lo, hi) after a round of answers (index, interesting): the oldest interesting one bounds
    it above, the newest uninteresting one below that bounds it below (one above an interesting one, possible
    only when the test is flaky, is not believed); unresolved ones join `skipped`."""
    found = list(found)
    skipped.update(i for i, answer in found if answer is None)
    hi = min((i for i, answer in found if answer is True and lo < i < hi), default=hi)
    lo = max((i for i, answer in found if answer is False and lo < i < hi), default=lo)
    return lo, hi


def k_ary(
    lo: int,
    hi: int,
    test: Callable[[list[int]], Answers],
    k: int,
    skipped: set[int] | None = None,
    stop: Callable[[], bool] = never,
) -> tuple[int, int]:
    """The open range (lo, hi) narrowed until no index between them is left to ask: `k` cut points a round,
    answered together by `test`. `lo` must be uninteresting and `hi` interesting; an unresolved index joins
    `skipped` and is not asked again."""
    skipped = set() if skipped is None else skipped
    while not stop():
        usable = [i for i in range(lo + 1, hi) if i not in skipped]
        if not usable:
            break
        points = cut_points(lo, hi, usable, k)
        lo, hi = narrow(lo, hi, skipped, zip(points, test(points)))
    return lo, hi


def smallest_interesting(
    high: int, test: Callable[[list[int]], Answers], batch: int = 1, low: int = 0, stop: Callable[[], bool] = never
) -> int:
    """The smallest n in (low, high] for which the test holds, assuming `high` holds and the answers are
    mostly monotone (as hlo_bisect assumes): a (batch+1)-ary search, `batch` points per round."""
    return k_ary(low, high, test, batch, stop=stop)[1]


def largest_interesting(
    high: int, test: Callable[[list[int]], Answers], batch: int = 1, stop: Callable[[], bool] = never
) -> int:
    """The largest n in [0, high) for which the test holds, assuming 0 holds (the mirror of smallest_interesting)."""
    mirrored = smallest_interesting(high, lambda points: test([high - p for p in points]), batch, 0, stop)
    return high - mirrored
