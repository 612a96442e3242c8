"""Noise-aware metric bisection against a fixed threshold, on a machine whose load changes under it.

Each trial bisects N synthetic candidates whose "program" is a real CPU workload timed here: candidates
from a random first bad on do STEP times more work. A CPU burner runs beside it: 0 to BURNERS busy
processes, their number changing at random every 0.2-1.5 s, so the load changes during every
bisection. The search, the anchors, the adaptive re-runs and the boundary check are xlatools' own
(bisect/driver.run_ordered, bisect/anchors.py, bisect/noise.py); only the run of the program is
replaced by timing the workload in this process (CALLS calls per run).

Variants:
- threshold, run time: each candidate measured once, the metric the run's total time (what a program
  that times itself reports), bad above a threshold set at the geometric midpoint of one measurement
  of each end (what a user who timed both ends once would pick): `--metric --threshold` today.
- threshold, per-call min: the same search, the run's value the fastest of its calls.
- noise-aware: `--metric` alone: anchors, per-call minima, adaptive re-runs, boundary check.
- noise-aware, CPU time: the same with each call's CPU time (thread_time) instead of its wall time.

A null scenario (no step: every candidate the same) counts how often each invents a first bad.

Usage: python benchmarks/bisect_noise.py [--trials 20] [--candidates 16] [--step 1.3] [--burners 3]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository's packages

from xlatools.bisect.checks import StepEnv  # noqa: E402
from xlatools.bisect.driver import Progress, run_ordered  # noqa: E402
from xlatools.bisect.engine import EndpointProblem, StepVerdict  # noqa: E402
from xlatools.bisect.metric_test import Measured, MetricTest  # noqa: E402
from xlatools.bisect.rule import Rule  # noqa: E402
from xlatools.bisect.state import State  # noqa: E402
from xlatools.console import Reporter  # noqa: E402
from xlatools.records.bisect import Candidate, ProgramTestSpec, ReleaseSpec, StepDetail  # noqa: E402
from xlatools.vocab import StepOutcome  # noqa: E402

CALLS = 15
WORK = 20_000  # loop iterations of one call (about 1-2 ms here)


def work(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def burn(active: multiprocessing.Value, index: int) -> None:  # type: ignore[valid-type]
    while True:
        if active.value > index:
            work(50_000)
        else:
            time.sleep(0.01)


class Burner:
    """BURNERS processes; a thread changes how many of them are busy at random intervals."""

    def __init__(self, burners: int, seed: int):
        self.active = multiprocessing.Value("i", 0)
        self.procs = [multiprocessing.Process(target=burn, args=(self.active, i), daemon=True) for i in range(burners)]
        self.stop = threading.Event()
        self.rng = random.Random(seed)
        self.burners = burners

    def __enter__(self):
        for p in self.procs:
            p.start()
        threading.Thread(target=self._change, daemon=True).start()
        return self

    def _change(self) -> None:
        while not self.stop.wait(self.rng.uniform(0.2, 1.5)):
            self.active.value = self.rng.randint(0, self.burners)

    def __exit__(self, *exc):
        self.stop.set()
        for p in self.procs:
            p.terminate()
            p.join()


@dataclass
class Counter:
    runs: int = 0


def run_once(
    candidate: int, first_bad: int | None, step: float, per_call: bool, counter: Counter, cpu: bool = False
) -> float:
    """One "run" of candidate: CALLS timed calls; the total, or the fastest call (wall or CPU time)."""
    n = int(WORK * (step if first_bad is not None and candidate >= first_bad else 1.0))
    counter.runs += 1
    clock = time.thread_time if cpu else time.perf_counter
    times = []
    t0 = time.perf_counter()
    for _ in range(CALLS):
        c0 = clock()
        work(n)
        times.append(clock() - c0)
    return min(times) if per_call else time.perf_counter() - t0


class Source:
    def prepare(self, key: str, label: str) -> StepEnv:
        return StepEnv(key)


class NoiseAware(MetricTest):
    def __init__(self, first_bad, step, counter, cpu=False):
        super().__init__(inner=type("Inner", (), {"rule": Rule(metric="t")})())  # type: ignore[arg-type]
        self.first_bad, self.step, self.counter, self.cpu = first_bad, step, counter, cpu

    def describe(self):  # type: ignore[override]
        return None

    def measure(self, step: StepEnv, out_root: Path, name: str) -> Measured:
        value = run_once(int(step.python), self.first_bad, self.step, True, self.counter, self.cpu)
        return Measured(value, str(out_root / name), value * CALLS, StepDetail())


@dataclass
class Threshold:
    first_bad: int | None
    step: float
    per_call: bool
    counter: Counter
    threshold: float = 0.0

    def describe(self):
        return None

    def check(self, env: StepEnv, out_root: Path, name: str) -> StepVerdict:
        value = run_once(int(env.python), self.first_bad, self.step, self.per_call, self.counter)
        outcome = StepOutcome.BAD if value > self.threshold else StepOutcome.GOOD
        return StepVerdict(outcome, f"{value:g}", str(out_root / name))


def bisect(test, n: int, folder: Path) -> tuple[str, int | None]:
    """(how it ended, the first bad it named)."""
    spec = ReleaseSpec(
        good="0", bad=str(n - 1), python_version="3.11", platform="cpu", test=ProgramTestSpec(program="-")
    )
    folder.mkdir(parents=True)
    candidates = [Candidate(key=str(i), label=f"c{i}") for i in range(n)]
    state = State(folder=folder, kind="releases", spec=spec, candidates=candidates)
    try:
        result = run_ordered(state, Source(), test, 0, Progress(Reporter.silent()))
    except EndpointProblem as exc:
        if os.environ.get("VERBOSE"):
            print("  refused:", exc.message)
        return "refused", None
    answer = state.result
    assert answer is not None
    if answer.flaky:
        if os.environ.get("VERBOSE"):
            print("  flagged:", result.first_bad, *answer.report_lines[:2], sep="\n    ")
        return "flagged", result.first_bad
    if answer.maybe_first_bad:
        return "skipped", result.first_bad
    return "answered", result.first_bad


def trial(variant: str, n: int, first_bad: int | None, step: float, folder: Path) -> tuple[str, int]:
    counter = Counter()
    if variant.startswith("noise-aware"):
        test: object = NoiseAware(first_bad, step, counter, cpu=variant.endswith("CPU time"))
    else:
        per_call = variant == "threshold, per-call min"
        test = Threshold(first_bad, step, per_call, counter)
        ends = [run_once(i, first_bad, step, per_call, counter) for i in (0, n - 1)]
        test.threshold = math.sqrt(ends[0] * ends[1])  # type: ignore[attr-defined]
    how, named = bisect(test, n, folder)
    if os.environ.get("VERBOSE"):
        print(f"  {variant}: first bad {first_bad}: {how} {named} ({counter.runs} runs)")
    if how == "answered":
        how = "right" if named == first_bad else "WRONG"
    return how, counter.runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--step", type=float, default=1.3)
    parser.add_argument("--burners", type=int, default=3)
    parser.add_argument("--null-trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    variants = ["threshold, run time", "threshold, per-call min", "noise-aware", "noise-aware, CPU time"]
    print(
        f"{args.trials} bisections of {args.candidates} candidates, step {args.step}x, {CALLS} calls per run, "
        f"0-{args.burners} CPU burners changing every 0.2-1.5 s on {os.cpu_count()} cores"
    )
    scenarios = [("step", [rng.randrange(1, args.candidates) for _ in range(args.trials)])]
    scenarios.append(("no step", [None] * args.null_trials))
    with Burner(args.burners, args.seed), tempfile.TemporaryDirectory() as tmp:
        for scenario, bounds in scenarios:
            print(f"\n{scenario}: {len(bounds)} bisections")
            print(f"{'variant':<26} {'right':>6} {'WRONG':>6} {'refused':>8} {'flagged':>8} {'skipped':>8} "
                  f"{'runs (median)':>14} {'runs (max)':>11} {'seconds':>8}")  # fmt: skip
            for variant in variants:
                outcomes, runs = [], []
                t0 = time.monotonic()
                for i, first_bad in enumerate(bounds):
                    how, count = trial(
                        variant, args.candidates, first_bad, args.step, Path(tmp) / f"{scenario}-{variant}-{i}"
                    )
                    outcomes.append(how)
                    runs.append(count)
                print(
                    f"{variant:<26} {outcomes.count('right'):>6} {outcomes.count('WRONG'):>6} "
                    f"{outcomes.count('refused'):>8} {outcomes.count('flagged'):>8} {outcomes.count('skipped'):>8} "
                    f"{statistics.median(runs):>14g} {max(runs):>11} {time.monotonic() - t0:>8.1f}"
                )


if __name__ == "__main__":
    main()
