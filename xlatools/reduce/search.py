"""Search procedures over plain callables (pure; tested without any process).

`test(batch)` takes a list of configurations and answers, for each, whether it is
interesting; a batch is what the caller may run side by side (--jobs).
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
BatchTest = Callable[[list], list[bool]]


def ddmin(items: Sequence[T], test: Callable[[list[list[T]]], list[bool]], batch: int = 1,
          stop: Callable[[], bool] = lambda: False) -> list[T]:
    """Zeller's delta debugging: a 1-minimal sublist of `items` for which test([sub]) holds.

    The full list must be interesting. Subsets are tried first, then complements; each
    group of tries is handed to `test` `batch` at a time, and the first interesting one
    (in order) is taken."""
    current = list(items)
    granularity = 2
    while len(current) >= 2 and not stop():
        chunks = _split(current, granularity)
        tries = [c for c in chunks] + ([[x for d in chunks if d is not c for x in d] for c in chunks] if granularity > 2 else [])
        found = _first(tries, test, batch, stop)
        if found is not None:
            current = tries[found]
            granularity = 2 if found < len(chunks) else max(granularity - 1, 2)
            continue
        if granularity >= len(current):
            break
        granularity = min(len(current), granularity * 2)
    return current


def _split(items: list[T], parts: int) -> list[list[T]]:
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


def _first(tries: list, test: Callable[[list], list[bool]], batch: int, stop: Callable[[], bool]) -> int | None:
    for start in range(0, len(tries), batch):
        if stop():
            return None
        answers = test(tries[start:start + batch])
        for offset, answer in enumerate(answers):
            if answer:
                return start + offset
    return None


def smallest_interesting(high: int, test: Callable[[list[int]], list[bool]], batch: int = 1, low: int = 0,
                         stop: Callable[[], bool] = lambda: False) -> int:
    """The smallest n in (low, high] for which test holds, assuming `high` holds and the answers are
    mostly monotone (as hlo_bisect assumes): a (batch+1)-ary search, `batch` points per round."""
    while high - low > 1 and not stop():
        step = (high - low) / (batch + 1)
        points = sorted({min(high - 1, max(low + 1, round(low + step * (k + 1)))) for k in range(batch)})
        answers = test(points)
        yes = [p for p, a in zip(points, answers) if a]
        if yes:
            high = yes[0]
            no_below = [p for p, a in zip(points, answers) if not a and p < high]
            low = max(no_below) if no_below else low
        else:
            low = points[-1]
    return high


def largest_interesting(high: int, test: Callable[[list[int]], list[bool]], batch: int = 1,
                        stop: Callable[[], bool] = lambda: False) -> int:
    """The largest n in [0, high) for which test holds, assuming 0 holds (the mirror of smallest_interesting)."""
    mirrored = smallest_interesting(high, lambda points: test([high - p for p in points]), batch, 0, stop)
    return high - mirrored
