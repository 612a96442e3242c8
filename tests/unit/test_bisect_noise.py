"""The noise-aware metric statistics (bisect/noise.py): anchors, their refusal, a step's verdict."""

from __future__ import annotations

import random

import pytest

from xlatools.bisect.noise import AnchorProblem, Anchors, auc, best_of_run, distinct


def noisy(centre: float, n: int, rel: float, seed: int) -> tuple[float, ...]:
    rng = random.Random(seed)
    return tuple(centre * (1 + rng.gauss(0, rel)) for _ in range(n))


def test_separated_anchors_judge_steps_by_their_position():
    anchors = Anchors(noisy(1.0, 5, 0.02, 1), noisy(1.3, 5, 0.02, 2))
    anchors.check()
    assert anchors.log and not anchors.exact
    like_good, like_bad = anchors.judge([1.005]), anchors.judge([1.31])
    assert like_good.verdict == "good" and abs(like_good.position) < 0.1
    assert like_bad.verdict == "bad" and abs(like_bad.position - 1) < 0.1
    middle = anchors.judge([1.14])  # the geometric midpoint: never decided, however often measured
    assert middle.verdict == "ambiguous"
    assert anchors.judge([1.14] * 20).verdict == "ambiguous"
    assert like_bad.summary.text().endswith("(1 run)") and "±" in like_bad.summary.text()


def test_an_outlier_run_moves_neither_the_anchors_nor_a_step():
    good = (1.0, 1.01, 0.99, 1.0, 9.0)  # one run hit by a burst of load
    bad = (1.3, 1.31, 1.29, 1.3, 1.3)
    anchors = Anchors(good, bad)
    anchors.check()  # the median and the rank share do not care about the 9.0
    assert anchors.judge([1.0, 1.01, 7.5]).verdict == "good"


def test_exact_metrics_need_no_noise_and_decide_by_the_midpoint():
    anchors = Anchors((13.4e6,) * 3, (84.7e6,) * 3)
    anchors.check()
    assert anchors.exact and anchors.sigma == 0
    assert anchors.judge([13.4e6]).verdict == "good" and anchors.judge([84.7e6]).verdict == "bad"
    assert anchors.judge([30e6]).verdict == "good"  # nearer the good end, in ratio
    gap, share = anchors.separation()
    assert gap == float("inf") and share == 1.0


def test_ends_that_do_not_differ_beyond_noise_are_refused_with_both_values():
    with pytest.raises(AnchorProblem) as same:
        Anchors(noisy(1.0, 5, 0.05, 3), noisy(1.0, 5, 0.05, 4)).check()
    assert "do not differ beyond noise" in same.value.message
    assert same.value.message.count("±") == 2 and "5 runs" in same.value.message
    with pytest.raises(AnchorProblem) as exact_same:
        Anchors((5.0,) * 3, (5.0,) * 3).check()
    assert "every run of each end gave the same value" in exact_same.value.message
    with pytest.raises(AnchorProblem) as wrong_way:
        Anchors(noisy(1.3, 5, 0.01, 5), noisy(1.0, 5, 0.01, 6)).check()
    assert "bad end is better" in wrong_way.value.message and "--higher-is-better" in wrong_way.value.hint
    Anchors(noisy(1.3, 5, 0.01, 5), noisy(1.0, 5, 0.01, 6), lower_is_better=False).check()  # throughput fell


def test_overlapping_ends_are_refused_even_when_the_medians_differ():
    good = (1.0, 1.1, 1.2, 1.3, 1.4)
    bad = (1.05, 1.15, 1.25, 1.35, 1.6)
    with pytest.raises(AnchorProblem):
        Anchors(good, bad).check()
    assert auc(good, bad, 1.0) < 0.9


def test_one_anchor_mode_calls_a_real_improvement_good():
    anchors = Anchors((), noisy(1.44, 5, 0.02, 7))  # the program as it is; good = 10 % better, beyond noise
    assert anchors.virtual
    anchors.check()
    assert anchors.judge([0.18]).verdict == "good"
    assert anchors.judge([1.43]).verdict == "bad"


def test_zero_and_negative_values_use_differences_not_ratios():
    anchors = Anchors((0.0, 0.0, 0.0), (4096.0, 4096.0, 4096.0))
    assert not anchors.log
    anchors.check()
    assert anchors.judge([0.0]).verdict == "good" and anchors.judge([4096.0]).verdict == "bad"


def test_helpers():
    assert best_of_run([3.0, 1.0, 2.0]) == 1.0 and best_of_run([3.0, 1.0], lower_is_better=False) == 3.0
    assert distinct((1.0,) * 3, (2.0,) * 3) == (True, 2.0)
    assert distinct((2.0,) * 3, (1.0,) * 3)[0]  # a step down is news too
    assert not distinct(noisy(1.0, 3, 0.05, 8), noisy(1.0, 3, 0.05, 9))[0]
