"""Drive one bisection: candidate source + test -> steps (run bundles) -> state file -> result.

The state is saved after every step (and on the way out, whatever happens), so an
interrupted bisection continues where it stopped when the same command runs again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from xlatools.bisect import anchors
from xlatools.bisect.checks import SkipStep, StepEnv, Test
from xlatools.bisect.engine import (
    BisectResult,
    EndpointProblem,
    Oracle,
    StepRecord,
    StepVerdict,
    bisect_ordered,
    ideal_steps,
)
from xlatools.bisect.parallel import ParallelSteps
from xlatools.bisect.state import State, point_link
from xlatools.bundle import safe_name, utc_now
from xlatools.errors import Interrupted, XlaToolsError
from xlatools.records.base import OMIT_NONE
from xlatools.records.bisect import BisectAnswer, CandidateRef, ConfirmRuns, DiffNote, Divergence
from xlatools.vocab import BisectStatus, StepOutcome

if TYPE_CHECKING:
    from xlatools.console import Reporter


class Source(Protocol):
    """A candidate source: makes the environment in which one candidate is tested."""

    def prepare(self, key: str, label: str) -> StepEnv: ...


class Progress:
    """A bisection's progress lines (`[bisect] ...`), through the command's reporter."""

    def __init__(self, reporter: Reporter):
        self.reporter = reporter

    def __call__(self, text: str) -> None:
        self.reporter.info(f"[bisect] {text}")


def make_step(state: State, source: Source, test: Test, progress: Progress, parallel: ParallelSteps | None = None):
    """The step function: (key, label) -> StepVerdict; with `parallel`, (n, key, label) -> StepVerdict for its
    worker threads, whose programs run quiet (their output in each step's logs) and which give up
    before testing once the round is being stopped."""
    steps_root = state.folder / "steps"

    def numbered(n: int, key: str, label: str) -> StepVerdict:
        progress(f"step {n}: {label}: preparing{where(state)}")
        t0 = time.monotonic()
        try:
            env = source.prepare(key, label)
            if parallel is not None:
                if parallel.cancel.is_set():
                    raise Interrupted(f"step {n} ({label}) stopped before its test")
                env = replace(env, quiet=True)
            progress(
                f"step {n}: {label}: ready in {env.install_s:.1f} s{' (' + env.note + ')' if env.note else ''}; running the test"
            )
            verdict = test.check(env, steps_root, f"step{n:02d}-{safe_name(label)}")
            if env.bazel_processes is not None:
                verdict = replace(verdict, bazel_processes=env.bazel_processes)
        except SkipStep as skip:
            verdict = StepVerdict(
                StepOutcome.SKIP, skip.reason, skip.bundle, skip.install_s or (time.monotonic() - t0), 0.0
            )
        progress(
            f"step {n}: {label}: {verdict.outcome.upper()} ({verdict.reason}; install {verdict.install_s:.1f} s, "
            f"run {verdict.run_s:.1f} s)"
        )
        return verdict

    if parallel is not None:
        return numbered
    return lambda key, label: numbered(len(state.steps) + 1, key, label)


def where(state: State) -> str:
    """For ordered searches: how many untested candidates are left between the known good and bad."""
    if state.kind in ("passes", "flags", "timeline") or not state.candidates:
        return ""
    index = {c.key: i for i, c in enumerate(state.candidates)}
    first = {index[s.key]: s.outcome for s in state.steps if s.attempt == 0 and s.key in index}
    lo = max((i for i, o in first.items() if o == StepOutcome.GOOD), default=0)
    hi = min((i for i, o in first.items() if o == StepOutcome.BAD and i > lo), default=len(state.candidates) - 1)
    left = sum(1 for i in range(lo + 1, hi) if i not in first)
    return (
        f" ({left} untested between {state.candidates[lo].label} and {state.candidates[hi].label}, "
        f"about {ideal_steps(left + 1)} more search steps)"
    )


def oracle_for(state: State, source: Source, test: Test, progress: Progress) -> Oracle:
    def record(_: StepRecord) -> None:
        state.save()

    return Oracle(state.steps, make_step(state, source, test, progress), record, utc_now)


def guarded(state: State, body: Callable[[], None]) -> None:
    """Run `body`; whatever happens, the state says how it ended (running steps are never half-recorded)."""
    try:
        body()
    except EndpointProblem as exc:
        state.status, state.message = BisectStatus.STOPPED, exc.message
        raise
    except (KeyboardInterrupt, Interrupted):
        state.status, state.message = BisectStatus.INTERRUPTED, "interrupted; run the same command again to continue"
        state.save()
        raise
    except XlaToolsError as exc:
        state.status, state.message = BisectStatus.FAILED, exc.message
        raise
    finally:
        state.save()


def run_ordered(
    state: State, source: Source, test: Test, confirm: int, progress: Progress, jobs: int = 1
) -> BisectResult:
    """Binary search over state.candidates (oldest first), or with `jobs` > 1 the K-ary search (jobs
    candidates per round, bisect/kary.py); links last-good/first-bad; result into the state."""
    keys = [c.key for c in state.candidates]
    labels = [c.label for c in state.candidates]
    oracle = oracle_for(state, source, test, progress)
    each = f"; {jobs} at a time" if jobs > 1 else ""
    progress(
        f"{len(keys)} candidates from {labels[0]} to {labels[-1]}; about {ideal_steps(len(keys))} steps "
        f"after the two ends{each} ({len(state.steps)} already done)"
    )
    found: list[BisectResult] = []

    def search() -> BisectResult:
        if jobs == 1:
            return bisect_ordered(keys, labels, oracle, confirm)
        from xlatools.bisect.kary import bisect_kary

        parallel = ParallelSteps(jobs)
        parallel.step = make_step(state, source, test, progress, parallel)
        return bisect_kary(keys, labels, oracle, parallel, jobs, confirm)

    def body() -> None:
        anchors.start(state, oracle, source, test, progress, jobs)  # --metric without --threshold: the ends first
        result = search()
        found.append(result)
        state.result = ordered_result(state, result)
        anchors.finish(state, oracle, source, test, result, progress)
        state.status = BisectStatus.DONE
        state.message = None
        _links(state)
        attach_diff(state)

    guarded(state, body)
    return found[0]


def attach_diff(state: State) -> None:
    """The diff of last-good vs first-bad into the answer: `xlatools.compare.diff.bisect_diff` writes
    diff.json and report.html under the bisection's diff/; when it cannot, the answer says why."""
    result = state.result
    good, bad = (result.last_good.bundle, result.first_bad.bundle) if result else (None, None)
    if not good or not bad:
        return
    from xlatools.compare.diff import bisect_diff
    from xlatools.errors import XlaToolsError

    try:
        result.diff = _diff_note(bisect_diff(Path(good), Path(bad), state.folder / "diff"))
    except (XlaToolsError, OSError) as exc:  # the answer stands without its diff
        result.diff = DiffNote(
            available=False, note=f"no diff: {getattr(exc, 'message', exc)}; try `xlatools diff {good} {bad}`"
        )


def _diff_note(found) -> DiffNote:
    """What compare's bisect_diff says about the two bundles, as the answer keeps it."""
    from xlatools.records import to_json

    data = to_json(found)
    first = data.get("first_divergence")
    return DiffNote(
        available=True,
        json=data.get("json"),
        report=data.get("report"),
        modules_differ=data.get("modules_differ"),
        first_divergence=Divergence(module=first["module"], pass_=first["pass"], pipeline=first.get("pipeline"))
        if first
        else None,
    )


def first_bundle(state: State, key: str) -> str | None:
    return next((s.bundle for s in state.steps if s.key == key and s.attempt == 0), None)


def ordered_result(state: State, result: BisectResult) -> BisectAnswer:
    cands = state.candidates
    good, bad = cands[result.last_good], cands[result.first_bad]
    return BisectAnswer(
        last_good=CandidateRef(key=good.key, label=good.label, bundle=first_bundle(state, good.key)),
        first_bad=CandidateRef(key=bad.key, label=bad.label, bundle=first_bundle(state, bad.key)),
        maybe_first_bad=[cands[i] for i in result.maybe_first_bad],
        confirm=ConfirmRuns(last_good=result.confirm["last_good"], first_bad=result.confirm["first_bad"]),
        flaky=result.flaky,
    )


def _links(state: State) -> None:
    result = state.result
    point_link(state.folder, "last-good", result.last_good.bundle if result else None)
    point_link(state.folder, "first-bad", result.first_bad.bundle if result else None)


@dataclass(frozen=True)
class StepTime:
    n: int
    label: str
    outcome: StepOutcome
    install_s: float
    run_s: float


@dataclass(frozen=True, kw_only=True)
class BuildCacheUse:
    """bisect commits: the bazel actions of the steps' builds and how many a cache served; the later
    steps' (2..n) show what the caches the steps share saved once the first step had built."""

    actions: int
    cache_hits: int
    later_actions: int
    later_cache_hits: int


@dataclass(frozen=True)
class Summary:
    """Numbers for the end of a bisection: candidates, steps vs ceil(log2 N), skips, time per step."""

    candidates: int
    steps: int
    search_steps: int
    ideal_steps: int | None  # binary search: ceil(log2 N) plus the two ends; ddmin (passes) has no such bound
    skips: int
    confirm_runs: int
    install_s: float
    run_s: float
    mean_step_s: float
    per_step: list[StepTime]
    builds: BuildCacheUse | None = field(default=None, metadata=OMIT_NONE)  # bisect commits, once a step built


def summary(state: State) -> Summary:
    steps = state.steps
    install = sum(s.install_s for s in steps)
    run = sum(s.run_s for s in steps)
    built = [s.bazel_processes for s in steps if s.bazel_processes is not None]
    later = [s.bazel_processes for s in steps[1:] if s.bazel_processes is not None]
    builds = (
        BuildCacheUse(
            actions=sum(c.actions for c in built),
            cache_hits=sum(c.cache_hits for c in built),
            later_actions=sum(c.actions for c in later),
            later_cache_hits=sum(c.cache_hits for c in later),
        )
        if built
        else None
    )
    return Summary(
        candidates=len(state.candidates),
        steps=len(steps),
        search_steps=sum(1 for s in steps if s.role != "confirm"),
        ideal_steps=ideal_steps(len(state.candidates)) + 2 if state.kind != "passes" else None,
        skips=sum(1 for s in steps if s.outcome == StepOutcome.SKIP),
        confirm_runs=sum(1 for s in steps if s.role == "confirm"),
        install_s=round(install, 3),
        run_s=round(run, 3),
        mean_step_s=round((install + run) / len(steps), 3) if steps else 0.0,
        per_step=[StepTime(s.n, s.label, s.outcome, s.install_s, s.run_s) for s in steps],
        builds=builds,
    )


def _answer_lines(result: BisectAnswer) -> list[str]:
    from xlatools.records import to_json

    lines = [
        f"last good: {result.last_good.label}  ({result.last_good.bundle})",
        f"first bad: {result.first_bad.label}  ({result.first_bad.bundle})",
    ]
    if result.maybe_first_bad:
        lines.append(
            "  skipped in between, so the first bad may also be: " + ", ".join(c.label for c in result.maybe_first_bad)
        )
    confirm = to_json(result.confirm)
    if result.flaky:
        lines.append(f"  FLAKY: the boundary steps disagreed on re-runs: {confirm}")
    elif any(len(v) > 1 for v in confirm.values()):
        lines.append(f"  confirmed: {confirm}")
    lines += result.report_lines
    diff = result.diff
    if diff is not None and diff.available:
        first = diff.first_divergence
        where = f"first diverging pass {first.pass_} in {first.module}; " if first else ""
        lines.append(f"last-good vs first-bad: {where}report {diff.report}")
        if diff.note:
            lines.append(f"  note: {diff.note}")
    elif diff is not None:
        lines.append(f"diff: {diff.note}")
    return lines


def render(state: State) -> str:
    """The human summary printed at the end (and on a finished bisection re-run)."""
    numbers = summary(state)
    lines = [
        f"bisect {state.kind}: {state.status}" + (f" ({state.message})" if state.message else ""),
        f"folder: {state.folder}",
    ]
    for s in state.steps:
        bundle = f"  {Path(s.bundle).name}" if s.bundle else ""
        lines.append(
            f"  {s.n:>3} {s.role:<9} {s.label:<28} {s.outcome:<5} install {s.install_s:6.1f} s  run "
            f"{s.run_s:6.1f} s  {s.reason}{bundle}"
        )
    if state.result is not None:
        lines += _answer_lines(state.result)
    ideal = f"; ceil(log2 N) + 2 ends = {numbers.ideal_steps}" if numbers.ideal_steps is not None else ""
    lines.append(
        f"{numbers.candidates} candidates, {numbers.steps} steps ({numbers.search_steps} search, "
        f"{numbers.confirm_runs} confirm{ideal}), "
        f"{numbers.skips} skipped; install {numbers.install_s:.1f} s, run {numbers.run_s:.1f} s, "
        f"{numbers.mean_step_s:.1f} s per step"
    )
    if numbers.builds is not None:
        b = numbers.builds
        lines.append(
            f"builds: {b.cache_hits} of {b.actions} bazel actions from a cache ({b.later_cache_hits} of "
            f"{b.later_actions} in the steps after the first)"
        )
    return "\n".join(lines)
