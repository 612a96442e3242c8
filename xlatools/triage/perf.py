"""`xlatools triage --metric NAME`: a slowdown (or a growth) from two releases to an ISSUE.md a maintainer can act on.

Stages (records/triage_perf.py), each recorded in `perf-triage.json` in the triage folder as it ends, kept on
the next invocation while what it was computed from is unchanged (the report runs every time):

1. releases: `bisect releases` with the metric (noise-aware without --threshold: the ends measured first,
   the boundary measured again side by side): last good, first bad, the numbers of both;
2. timeline: the releases that bisection measured, as a table and a picture (no new runs);
3. flags: `bisect flags` on first bad, with last good as the good anchor: the switch that recovers;
4. growth: the compiled modules of last good and first bad compared (xlatools' own per-module metrics):
   the one that grew most;
5. report: ISSUE.md (triage/perf_report.py).

A stage that cannot do its part says why and the others still run, as in the crash triage.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.bundle import utc_now
from xlatools.errors import EXIT_FAILED, EXIT_MISSING, EXIT_OK, UsageError
from xlatools.records.triage import TriageSpec
from xlatools.records.triage_perf import PERF_SCHEMA, FlagsFound, PerfStage, PerfTriageState
from xlatools.triage.plan import TriageRequest, folder_for, load_state, save_state, spec_record
from xlatools.triage.release_stage import ReleaseSides, bisect_the_releases
from xlatools.triage.stages import StageProblem, run_stage
from xlatools.vocab import StageStatus

if TYPE_CHECKING:
    from xlatools.console import Reporter

STATE_FILE = "perf-triage.json"


def load(folder: Path) -> PerfTriageState | None:
    return load_state(folder, STATE_FILE, PerfTriageState, "metric triage state", PERF_SCHEMA)


def save(state: PerfTriageState) -> None:
    save_state(state, STATE_FILE)


def open_state(out: Path, spec: TriageSpec, fresh: bool) -> PerfTriageState:
    from datetime import datetime, timezone

    from xlatools.fsutil import make_dir

    folder = folder_for(out, spec)
    if fresh and folder.exists():
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        os.replace(folder, folder.with_name(f"{folder.name}.{stamp}"))
    state = None if fresh else load(folder)
    if state is not None and spec_record(state.spec) != spec_record(spec):
        raise UsageError(f"{folder / STATE_FILE} records another triage", hint="use another --out, or --fresh")
    if state is None:
        make_dir(folder, "--out")
        state = PerfTriageState(spec=spec, folder=folder)
        save(state)
    return state


@dataclass
class PerfContext(ReleaseSides):
    request: TriageRequest
    state: PerfTriageState
    reporter: Reporter
    argv: list[str]


def releases(ctx: PerfContext) -> str:
    answer, summary = bisect_the_releases(ctx)
    ctx.state.metric = answer.metric
    if answer.metric is not None and answer.metric.ratio:
        summary += f"; {answer.metric.name} {answer.metric.ratio:.3g}x"
    if answer.maybe_first_bad:
        summary += f"; the first bad may also be {', '.join(c.key for c in answer.maybe_first_bad)} (skipped)"
    if answer.flaky:
        raise StageProblem(StageStatus.FAILED, f"{summary}; the boundary did not hold when measured again", EXIT_FAILED)
    return summary


def timeline(ctx: PerfContext) -> str:
    """The releases the bisection measured (ends, search steps, the boundary again), drawn; no new runs."""
    from xlatools.bisect.state import load as load_bisection
    from xlatools.bisect.timeline_view import analyse
    from xlatools.compare.timeline import write_timeline

    found = ctx.state.releases
    bisection = load_bisection(Path(found.folder)) if found and found.folder else None
    if bisection is None:
        raise StageProblem(StageStatus.CANNOT_RUN, "no release bisection to draw", EXIT_MISSING)
    rule = ctx.request.test.rule
    measured = [c for c in bisection.candidates if any(s.key == c.key and s.metric for s in bisection.steps)]
    if not measured:  # a finding, not a failure: nothing to draw
        return "no values to draw: a --threshold bisection records none (without --threshold every run is kept)"
    result = analyse(measured, bisection.steps, rule.metric or "metric", rule.higher_is_better, 3)
    title = f"{result.metric}: the releases bisected ({measured[0].label} .. {measured[-1].label})"
    svg, html = write_timeline(result, ctx.folder, title)
    result.svg, result.html = str(svg), str(html)
    ctx.state.timeline = result
    steps = ", ".join(f"{s.before}->{s.after} {s.direction} {s.ratio:.3g}x" for s in result.steps) or "no step"
    return f"{len(measured)} releases measured: {steps} ({svg.name})"


def flags(ctx: PerfContext) -> str:
    from xlatools.bisect.flags import FlagsRequest, NoSwitch, run_flags, table_lines
    from xlatools.bisect.metric_test import MetricTest
    from xlatools.bisect.checks import build_test

    good, bad = ctx.ends()
    python = ctx.python_of(bad)
    anchored = isinstance(build_test(ctx.request.test, ctx.reporter), MetricTest)
    good_python = ctx.python_of(good) if anchored else None
    request = FlagsRequest(test=ctx.request.test, python=python, good_python=good_python, out=ctx.folder / "bisect")
    try:
        state = run_flags(request, ctx.reporter)
    except NoSwitch as exc:  # a finding: the table has nothing for this jaxlib
        ctx.state.flags = FlagsFound(folder=str(request.out), python=python, good_python=good_python)
        return f"{exc.message} ({exc.hint})" if exc.hint else exc.message
    result = state.flags
    if result is None:
        raise StageProblem(StageStatus.CANNOT_RUN, state.message or "bisect flags found nothing", EXIT_MISSING)
    chosen = {r.name: r for r in result.rows}
    ctx.state.flags = FlagsFound(
        folder=str(state.folder), python=python, good_python=good_python, recovers=result.recovers,
        flags=[chosen[n].flag for n in result.recovers], reasons=[chosen[n].reason for n in result.recovers],
        tried=sum(1 for r in result.rows if r.tried), table=table_lines(state),
    )  # fmt: skip
    if not result.recovers:
        return f"no switch of the {ctx.state.flags.tried} tried on jax {bad} recovers it"
    return f"on jax {bad}, {', '.join(result.recovers)} recover{'s' if len(result.recovers) == 1 else ''} it"


RUNNERS: dict[PerfStage, Callable[[PerfContext], str]] = {
    PerfStage.RELEASES: releases,
    PerfStage.TIMELINE: timeline,
    PerfStage.FLAGS: flags,
}


def basis(state: PerfTriageState, stage: PerfStage) -> str:
    found = state.releases
    ends = f"{found.last_good}..{found.first_bad}" if found else f"{state.spec.good}..{state.spec.bad}"
    if stage == PerfStage.RELEASES:
        return f"{state.spec.good}..{state.spec.bad}"
    if stage == PerfStage.GROWTH:
        return f"{found.last_good_bundle}|{found.first_bad_bundle}" if found else ends
    return ends if stage != PerfStage.REPORT else ""


WORK = {
    PerfStage.RELEASES: "bisect releases --good {good} --bad {bad} with the metric: last good, first bad, both measured",
    PerfStage.TIMELINE: "the releases the bisection measured: a table and timeline.svg (no new runs)",
    PerfStage.FLAGS: "bisect flags on first bad (last good the good anchor): the switch that recovers",
    PerfStage.GROWTH: "the compiled modules of last good and first bad compared: the one that grew most",
    PerfStage.REPORT: "ISSUE.md: the numbers, the workaround, the timeline, the modules, the commands",
}


def plan_perf(request: TriageRequest, reporter: Reporter) -> tuple[Path, list[dict[str, str]]]:  # JSON rows
    """`--dry-run`: the folder and what each stage would do now (nothing runs, nothing is written)."""
    from xlatools.triage.execute import _test, spec_of

    spec = spec_of(request, _test(request, reporter))
    folder = folder_for(request.out, spec)
    state = load(folder)
    skip = {s.value for s in request.skip}
    rows = []
    for stage in PerfStage:
        record = state.record(stage) if state else None
        if stage.value in skip:
            action, reason = "skip", "--skip"
        elif record and record.status == StageStatus.DONE and stage != PerfStage.REPORT:
            action, reason = "keep", f"done before: {record.reason}"
        else:
            action, reason = "run", ""
        work = WORK[stage].format(good=request.good, bad=request.bad)
        rows.append({"stage": stage.value, "action": action, "reason": reason, "work": work})
    return folder, rows


def perf_triage(request: TriageRequest, spec: TriageSpec, argv: list[str], reporter: Reporter) -> PerfTriageState:
    """Run (or continue) a metric triage; the state says what each stage found and how it ended."""
    from xlatools.triage.perf_growth import growth
    from xlatools.triage.perf_report import write_issue

    state = open_state(request.out, spec, request.fresh)
    reporter.step(
        f"metric triage of {spec.test.program}: jax {request.good} (good) .. {request.bad} (bad) in {state.folder}"
    )
    ctx = PerfContext(request, state, reporter, argv)
    runners = {**RUNNERS, PerfStage.GROWTH: growth, PerfStage.REPORT: lambda c: write_issue(c.state, c.argv)}
    skip = {s.value for s in request.skip}
    order = list(PerfStage)
    for number, stage in enumerate(order, 1):
        record = state.record(stage)
        head = f"[triage] {number}/{len(order)} {stage}"
        now = basis(state, stage)
        if stage.value in skip:
            reporter.info(f"{head}: skip (--skip)")
            if record.status != StageStatus.DONE:
                record.status, record.reason = StageStatus.SKIPPED, "--skip"
            continue
        if record.status == StageStatus.DONE and record.basis == now and stage != PerfStage.REPORT:
            reporter.info(f"{head}: done before: {record.reason}")
            continue
        reporter.step(f"{head}: running")
        try:
            run_stage(record, functools.partial(runners[stage], ctx), now, utc_now)  # type: ignore[arg-type]
        finally:
            save(state)
        (reporter.info if record.status == StageStatus.DONE else reporter.warn)(
            f"{head}: {record.status}: {record.reason}"
        )
    state.exit_code = next(
        (r.exit_code or EXIT_MISSING for r in state.stages if r.status not in (StageStatus.DONE, StageStatus.SKIPPED)),
        EXIT_OK,
    )
    save(state)
    return state
