"""`xlatools bisect timeline`: every release from --from to --to measured, in rounds, and what changed.

Round r measures each release once (oldest first in even rounds, newest first in odd ones), so a change
of load during the timeline spreads over all releases instead of one end of it; `--repeat` rounds (an
exact metric stops after 3). Every run is recorded in the bisect state (a step with its value) as it
finishes: the same command continues an interrupted timeline and runs nothing twice. With `--jobs K`
K releases run side by side (their environments made in parallel too; with `--executor slurm` each
run is a Slurm job). A release whose environment cannot be made or whose program fails is a skip,
named in the table with the reason. The answer: a row per release (value, spread, runs, ratio to the
previous measured release), every change beyond noise named (up and down), and a picture
(timeline.svg; timeline.html with the table, drawn by xlatools/compare/timeline.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bisect.checks import SkipStep, TestOptions, build_test
from xlatools.bisect.driver import Progress, guarded
from xlatools.bisect.engine import StepVerdict
from xlatools.bisect.metric_test import MIN_EXACT_ROUNDS, MetricTest
from xlatools.bisect.samples import MetricMissing
from xlatools.bisect.timeline_view import analyse, exact
from xlatools.bundle import safe_name, utc_now
from xlatools.errors import Interrupted, UsageError
from xlatools.records.bisect import Candidate, StepDetail, TimelineSpec
from xlatools.records.bisect_metric import MetricRuns
from xlatools.vocab import BisectStatus, Platform, StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.releases import ReleaseSource
    from xlatools.bisect.state import State
    from xlatools.console import Reporter

TIMELINE_REPEAT = 3  # rounds by default: a timeline is a survey; the bisection that follows measures closer


@dataclass(frozen=True, kw_only=True)
class TimelineRequest:
    first: str
    last: str
    test: TestOptions
    python_version: str = "3.11"
    out: Path = Path("artifacts/bisect")
    fresh: bool = False
    jobs: int = 1
    requirements: tuple[str, ...] = field(default=())  # --with / --requirements, for every release's environment

    @property
    def platform(self) -> str:
        return "gpu" if self.test.platform == Platform.GPU else "cpu"

    @property
    def repeat(self) -> int:
        return self.test.rule.repeat or TIMELINE_REPEAT


def metric_test(options: TestOptions, reporter: Reporter) -> MetricTest:
    test = build_test(options, reporter)
    if not isinstance(test, MetricTest):
        raise UsageError(
            "a timeline measures a metric: give --metric NAME (without --threshold) and a program after --",
            hint="e.g. xlatools bisect timeline --from 0.4.31 --to 0.5.0 --metric run_s -- prog.py",
        )
    return test


def spec_of(request: TimelineRequest, test: MetricTest) -> TimelineSpec:
    return TimelineSpec(
        first=request.first,
        last=request.last,
        python_version=request.python_version,
        platform=request.platform,
        repeat=request.repeat,
        test=test.describe(),
        requirements=list(request.requirements) or None,
    )


@dataclass
class Run:
    """One run of one release in one round."""

    n: int
    candidate: Candidate
    attempt: int


def measure_one(
    state: State, source: ReleaseSource, test: MetricTest, run: Run, progress: Progress, quiet: bool = False
) -> StepVerdict:
    """One run of one release (its environment made first when it is not cached); a skip when either fails."""
    from dataclasses import replace

    label = run.candidate.label
    t0 = time.monotonic()
    try:
        env = replace(source.prepare(run.candidate.key, label), quiet=quiet)  # side by side: output in the logs
        got = test.measure(env, Path(state.folder or ".") / "steps", f"step{run.n:02d}-{safe_name(label)}")
    except (SkipStep, MetricMissing) as exc:
        progress(f"{label}: skip ({exc.reason})")
        return StepVerdict(StepOutcome.SKIP, exc.reason, getattr(exc, "bundle", None), 0.0, time.monotonic() - t0)
    runs = MetricRuns(name=test.metric, values=[got.value], bundles=[got.bundle], centre=got.value)
    progress(f"{label} (round {run.attempt + 1}): {test.metric} {got.value:.4g}")
    return StepVerdict(
        StepOutcome.GOOD,
        f"{test.metric} {got.value:.6g}",
        got.bundle,
        env.install_s,
        got.seconds,
        got.detail,
        metric=runs,
    )


def pending(state: State, attempt: int) -> list[Run]:
    """The runs round `attempt` still needs, in its order; releases that were skipped are not measured again."""
    skipped = {s.key for s in state.steps if s.outcome == StepOutcome.SKIP}
    done = {(s.key, s.attempt) for s in state.steps}
    order = state.candidates if attempt % 2 == 0 else state.candidates[::-1]
    n = max((s.n for s in state.steps), default=0)
    runs = []
    for candidate in order:
        if candidate.key not in skipped and (candidate.key, attempt) not in done:
            n += 1
            runs.append(Run(n, candidate, attempt))
    return runs


def run_round(state: State, source: ReleaseSource, test: MetricTest, runs: list[Run], jobs: int, progress) -> None:
    """The round's runs, one at a time or `jobs` side by side; each recorded (and saved) as it finishes."""

    def record(run: Run, verdict: StepVerdict, started: str) -> None:
        from xlatools.records.bisect import StepRecord

        state.steps.append(
            StepRecord(
                n=run.n, key=run.candidate.key, label=run.candidate.label, role="measure", attempt=run.attempt,
                outcome=verdict.outcome, reason=verdict.reason, bundle=verdict.bundle,
                install_s=round(verdict.install_s, 3), run_s=round(verdict.run_s, 3), started=started,
                finished=utc_now(), detail=verdict.detail or StepDetail(), metric=verdict.metric,
            )
        )  # fmt: skip
        state.save()

    if jobs == 1:
        for run in runs:
            started = utc_now()
            record(run, measure_one(state, source, test, run, progress), started)
        return
    from xlatools.bisect.kary import StepCall
    from xlatools.bisect.parallel import ParallelSteps

    by_n = {run.n: run for run in runs}
    parallel = ParallelSteps(jobs)

    def numbered(n: int, key: str, label: str) -> StepVerdict:
        if parallel.cancel.is_set():  # the round is being stopped (Ctrl-C, a failed run): do not start another
            raise Interrupted(f"{label} (round {by_n[n].attempt + 1}) stopped before its run")
        return measure_one(state, source, test, by_n[n], progress, quiet=True)

    parallel.step = numbered
    started = utc_now()
    for call, verdict in parallel(
        [StepCall(r.n, r.candidate.key, r.candidate.label, "measure", r.attempt) for r in runs]
    ):
        record(by_n[call.n], verdict, started)


def measure_all(state: State, source: ReleaseSource, test: MetricTest, repeat: int, jobs: int, progress) -> None:
    """Every round, then the analysis and the picture into the state."""
    from xlatools.bisect.timeline_view import runs_of

    for attempt in range(repeat):
        runs = pending(state, attempt)
        if runs:
            progress(f"round {attempt + 1}/{repeat}: {len(runs)} run{'s' if len(runs) != 1 else ''}")
            run_round(state, source, test, runs, jobs, progress)
        measured = [r for r in (runs_of(c, state.steps, test.metric)[0] for c in state.candidates) if r is not None]
        if attempt + 1 >= MIN_EXACT_ROUNDS and exact(measured, MIN_EXACT_ROUNDS):
            progress(f"{test.metric}: every run of each release gave the same value (an exact metric): enough rounds")
            break


def write_picture(state: State, result) -> None:
    """timeline.svg and timeline.html into the bisect folder (or a note in the state when they cannot be drawn)."""
    from xlatools.compare.timeline import write_timeline

    svg, html = write_timeline(result, Path(state.folder or "."), f"{result.metric}: {state.candidates[0].label} .. "
                               f"{state.candidates[-1].label}")  # fmt: skip
    result.svg, result.html = str(svg), str(html)


def plan_timeline(request: TimelineRequest, reporter: Reporter):
    """`--dry-run`: the releases, what each environment installs (cached or not), the test; `ideal_steps` is
    the most runs the timeline makes (releases x rounds)."""
    from xlatools.bisect.api import DryRunPlan, PlannedCandidate
    from xlatools.bisect.envs import envs_root, release_env
    from xlatools.bisect.releases import release_candidates

    test = metric_test(request.test, reporter)
    plan = release_candidates(request.first, request.last, request.python_version)
    rows = []
    for version in plan.candidates:
        env = release_env(version, request.python_version, request.platform, request.requirements)
        cached = (envs_root() / env.name / "xlatools-env.json").exists()
        rows.append(PlannedCandidate(version, f"jax {version}", env.name, list(env.requirements), cached))
    return DryRunPlan("timeline", rows, test.describe(), len(rows) * request.repeat, excluded=plan.excluded)


def run_timeline(request: TimelineRequest, reporter: Reporter) -> State:
    from xlatools.bisect.api import resume_or_new
    from xlatools.bisect.releases import ReleaseSource, release_candidates

    progress = Progress(reporter)
    test = metric_test(request.test, reporter)
    spec = spec_of(request, test)

    def candidates() -> tuple[list[Candidate], list[str]]:
        plan = release_candidates(request.first, request.last, request.python_version)
        notes = [f"jax {v}: no jaxlib {v} for Python {request.python_version} (not measured)" for v in plan.excluded]
        return [Candidate(key=v, label=f"jax {v}") for v in plan.candidates], notes

    state = resume_or_new(
        request.out, f"{request.first}..{request.last}", spec, request.fresh, candidates, progress, test
    )
    for note in state.notes:
        progress(note)
    source = ReleaseSource(request.python_version, request.platform, progress, request.requirements)

    def body() -> None:
        state.status = BisectStatus.RUNNING
        progress(
            f"{len(state.candidates)} releases from {state.candidates[0].label} to {state.candidates[-1].label}, "
            f"{request.repeat} rounds of {test.metric} ({len(state.steps)} runs recorded)"
        )
        measure_all(state, source, test, request.repeat, request.jobs, progress)
        higher = test.rule.higher_is_better
        result = analyse(state.candidates, state.steps, test.metric, higher, MIN_EXACT_ROUNDS)
        write_picture(state, result)
        state.timeline = result
        state.status, state.message = BisectStatus.DONE, None

    guarded(state, body)
    return state
