"""xlatools/search.py: the one ddmin and K-ary split of bisect and reduce, with their hooks (batch, stop, unresolved)."""

from __future__ import annotations

from xlatools import search
from xlatools.bisect.engine import ddmin as bisect_ddmin


def test_one_ddmin_for_bisect_and_reduce():
    items = [f"p{i}" for i in range(12)]
    asked_bisect, asked_reduce = [], []

    def one(subset):
        asked_bisect.append(tuple(subset))
        return {"p2", "p9"} <= set(subset)

    def batch(tries):
        asked_reduce.extend(tuple(t) for t in tries)
        return [{"p2", "p9"} <= set(t) for t in tries]

    assert bisect_ddmin(items, one) == ("p2", "p9") == tuple(search.ddmin(items, batch))
    assert asked_bisect == asked_reduce  # one at a time, the same questions in the same order


def test_unresolved_answers_batches_and_stop():
    def shy(tries):  # p5 alone is interesting; any try holding p0 cannot be tested
        return [None if "p0" in t else t == ["p5"] or ("p5" in t and len(t) > 1) for t in tries]

    assert search.ddmin([f"p{i}" for i in range(8)], shy, batch=3) == ["p5"]
    calls = []

    def count(tries):
        calls.append(len(tries))
        return [False] * len(tries)

    stopped = iter([False, False])  # the loop, the first batch; then the time is up
    assert search.ddmin(list(range(8)), count, batch=2, stop=lambda: next(stopped, True)) == list(range(8))
    assert calls == [2]  # asked once, then the time was up


def test_k_ary_split_over_counts():
    asked = []

    def test(points):
        asked.append(points)
        return [None if p == 40 else p >= 37 for p in points]

    assert search.smallest_interesting(100, test, batch=3) == 37
    assert all(len(points) == len(set(points)) for points in asked)
    assert sum(p == 40 for points in asked for p in points) <= 1  # an unresolved point is not asked again
    assert search.largest_interesting(100, lambda ps: [p <= 61 for p in ps], batch=1) == 61
    assert search.cut_points(0, 12, range(1, 12), 3) == [3, 6, 9]
    skipped: set[int] = set()
    assert search.narrow(0, 12, skipped, [(3, False), (6, None), (9, True)]) == (3, 9) and skipped == {6}
