"""The K-ary search (`bisect releases --jobs K`) with plain callables: the same answers as K = 1 for
every boundary, with skips, flaky boundaries and --confirm; rounds of at most K steps; resume
after an interruption in the middle of a round without running a step twice."""

from __future__ import annotations

import random

import pytest

from tests.unit.test_bisect_engine import history, search
from xlatools.bisect.engine import EndpointProblem, Oracle, StepVerdict
from xlatools.bisect.kary import bisect_kary, narrow, one_at_a_time
from xlatools.search import cut_points


def kary(n, step, jobs, steps=None, confirm=0, runner=None):
    steps = [] if steps is None else steps
    rounds: list[list[str]] = []
    inner = runner or one_at_a_time(step)

    def run_batch(calls):
        rounds.append([c.key for c in calls])
        yield from inner(calls)

    oracle = Oracle(steps, step, lambda record: None, lambda: "t")
    keys = [str(i) for i in range(n)]
    return bisect_kary(keys, keys, oracle, run_batch, jobs, confirm), steps, rounds


def answer(result):
    return result.last_good, result.first_bad, result.maybe_first_bad, result.confirm, result.flaky


@pytest.mark.parametrize("jobs", [2, 3, 4, 7])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 17, 40])
def test_every_boundary_gives_the_answer_of_one_job(n, jobs):
    for first_bad in range(1, n):
        one, _ = history(n, first_bad)
        expected, _, _ = search(n, one)
        step, calls = history(n, first_bad)
        result, steps, rounds = kary(n, step, jobs)
        assert answer(result) == answer(expected)
        assert len(calls) == len(set(calls))  # no step twice
        assert all(len(r) <= jobs for r in rounds)
        assert sorted(s.n for s in steps) == list(range(1, len(steps) + 1))


def test_more_jobs_take_fewer_rounds():
    n = 200
    worst = {}
    for jobs in (1, 2, 4, 8):
        counts = []
        for first_bad in range(1, n, 7):
            step, _ = history(n, first_bad)
            counts.append(len(kary(n, step, jobs)[2]) if jobs > 1 else len(search(n, step)[1]))
        worst[jobs] = max(counts)
    assert worst[1] > worst[2] > worst[4] > worst[8]
    assert worst[4] <= 4  # round one, then ceil(log5(~66)) = 3 rounds over what is left


def test_four_candidates_and_four_jobs_are_one_round():
    step, calls = history(4, first_bad=3)
    result, _, rounds = kary(4, step, 4)
    assert (result.last_good, result.first_bad) == (2, 3)
    assert rounds == [["0", "3", "1", "2"]]


def test_random_skips_give_the_answer_of_one_job():
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randrange(3, 60)
        first_bad = rng.randrange(1, n)
        skips = {i for i in range(1, n - 1) if rng.random() < 0.25}
        expected, _, _ = search(n, history(n, first_bad, skips)[0])
        for jobs in (2, 3, 5):
            step, calls = history(n, first_bad, skips)
            result, _, _ = kary(n, step, jobs)
            assert answer(result) == answer(expected), (n, first_bad, skips, jobs)
            assert len(calls) == len(set(calls))


def test_confirm_and_flaky_boundaries_are_judged_as_with_one_job():
    for flaky in (None, {6: ["bad", "good", "bad"]}):
        expected, one_steps, _ = search(16, history(16, 6, flaky=flaky)[0], confirm=2)
        result, steps, rounds = kary(16, history(16, 6, flaky=flaky)[0], 3, confirm=2)
        assert answer(result) == answer(expected)
        confirms = [s for s in steps if s.role == "confirm"]
        assert [(s.key, s.attempt) for s in confirms] == [("5", 1), ("6", 1), ("5", 2), ("6", 2)]
        assert rounds[-2:] == [["5", "6"], ["5", "6"]]


def test_wrong_ends_stop_with_the_messages_of_one_job():
    step, calls = history(10, first_bad=0)
    with pytest.raises(EndpointProblem, match="'good' is not good"):
        kary(10, step, 4)
    assert sorted(calls) == ["0", "3", "6", "9"]  # the whole first round ran and is recorded
    with pytest.raises(EndpointProblem, match="'bad' is not bad"):
        kary(10, history(10, first_bad=99)[0], 2)
    with pytest.raises(EndpointProblem, match="could not be tested: cannot build"):
        kary(10, history(10, first_bad=5, skips={9})[0], 3)


def test_an_interrupted_round_resumes_without_running_a_step_twice():
    step, calls = history(60, first_bad=37)

    class Stop(Exception):
        pass

    def interrupted_in_round_two(calls_in_batch):
        for call in calls_in_batch:
            if len(calls) == 6:  # round one (4 steps) and half of round two
                raise Stop
            yield call, step(call.key, call.label)

    steps: list = []
    with pytest.raises(Stop):
        kary(60, step, 4, steps, runner=interrupted_in_round_two)
    assert len(steps) == 6
    kept = list(steps)
    for jobs in (4, 2):  # the same --jobs, then another: the recorded answers are used either way
        again, ran = history(60, first_bad=37)
        result, steps, _ = kary(60, again, jobs, list(kept))
        assert result.first_bad == 37 and steps[:6] == kept
        assert not set(ran) & {s.key for s in kept} and len(ran) == len(set(ran))  # nothing ran twice


def test_cut_points_and_narrowing():
    assert cut_points(0, 10, range(1, 10), 1) == [5]
    assert cut_points(0, 9, range(1, 9), 1) == [4]  # ties to the lower, as engine.pick_middle
    assert cut_points(0, 12, range(1, 12), 3) == [3, 6, 9]
    assert cut_points(0, 5, [2, 4], 3) == [2, 4]
    skipped: set[int] = set()
    assert narrow(0, 12, skipped, [(3, "good"), (6, "skip"), (9, "bad")]) == (3, 9) and skipped == {6}
    assert narrow(0, 12, set(), [(3, "bad"), (9, "good")]) == (0, 3)  # a good above a bad is not believed


def test_the_runner_may_finish_steps_in_any_order():
    step, _ = history(30, first_bad=11)

    def backwards(calls_in_batch):
        for call in reversed(calls_in_batch):
            yield call, step(call.key, call.label)

    expected, _, _ = search(30, history(30, 11)[0])
    result, steps, _ = kary(30, step, 4, runner=backwards)
    assert answer(result) == answer(expected)
    assert [s.n for s in steps[:4]] == [4, 3, 2, 1]  # numbered in the order they started, recorded as they end


def test_one_job_is_the_binary_search_itself():
    step, calls = history(40, first_bad=23)
    expected_step, expected_calls = history(40, first_bad=23)
    search(40, expected_step)
    result, _, rounds = kary(40, step, 1)
    assert calls == expected_calls and rounds == []  # bisect_ordered asks one candidate at a time itself
    with pytest.raises(Exception, match="--jobs 0"):
        kary(40, step, 0)


def test_verdicts_keep_their_reasons_and_bundles():
    def step(key, label):
        i = int(key)
        return StepVerdict("bad" if i >= 3 else "good", f"exit {int(i >= 3)}", f"/b/{key}")

    _, steps, _ = kary(6, step, 3)
    assert all(s.bundle == f"/b/{s.key}" and s.reason.startswith("exit") for s in steps)
