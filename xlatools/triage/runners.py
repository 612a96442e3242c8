"""What each stage of a triage does: the capabilities that exist, chained (one function per stage).

Every stage writes under the triage folder (bisect/, runs/, diff/, replay/, reduce/, isolate/) and leaves its finding
in the state; each capability keeps its resumable state there, so an interrupted stage continues where it stopped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.errors import EXIT_FAILED, EXIT_MISSING, Interrupted
from xlatools.records.triage import (
    DiffFound,
    DumpsFound,
    IsolateFound,
    ModuleVerdict,
    PassesFound,
    ReduceFound,
    SideRun,
    TriageState,
)
from xlatools.triage.handover import handing_over, unless_handed_over
from xlatools.triage.plan import TriageRequest
from xlatools.triage.release_stage import ReleaseSides, bisect_the_releases
from xlatools.triage.stages import StageProblem
from xlatools.vocab import ExitCodeMode, Platform, StageStatus, Status, TriageStage

if TYPE_CHECKING:
    from xlatools.bisect.checks import ProgramTest
    from xlatools.console import Reporter

DUMP_PRESETS = ("dump:hlo", "dump:snapshots")  # before/after text, and the real arguments of each execution


@dataclass
class Context(ReleaseSides):
    request: TriageRequest
    state: TriageState
    test: ProgramTest
    reporter: Reporter
    argv: list[str]


def releases(ctx: Context) -> str:
    answer, summary = bisect_the_releases(ctx)
    if answer.maybe_first_bad:
        summary += f"; the first bad may also be {', '.join(c.key for c in answer.maybe_first_bad)} (skipped)"
    if answer.flaky:
        raise StageProblem(StageStatus.FAILED, f"{summary}; the boundary steps disagreed (flaky)", EXIT_FAILED)
    return summary


def _dumping_run(ctx: Context, version: str, name: str) -> SideRun:
    from xlatools.records.run import ProfileRun
    from xlatools.run.execute import execute_plan, prepare
    from xlatools.run.plan import RunRequest

    opts = ctx.request.test
    request = RunRequest(
        program=ctx.test.program,
        python=ctx.python_of(version),
        dump=True,
        presets=list(DUMP_PRESETS),
        xla_flags=list(opts.xla_flags),
        env=list(opts.env),
        platform=opts.platform,
        timeout=opts.timeout,
        name=name,
    )
    prepared = prepare(request, ProfileRun(), {}, (caller_env := dict(os.environ)), Path(opts.cwd), ctx.reporter)
    record = execute_plan(
        prepared,
        ctx.folder / "runs",
        ctx.argv + [f"(dumping run, jax {version})"],
        caller_env,
        ctx.reporter,
        echo_stdout_to_stderr=True,
        exit_code_mode=ExitCodeMode.PROGRAM,
        cluster=opts.cluster,
    ).record  # --executor slurm: the dumping runs are jobs too
    if record.status == Status.INTERRUPTED:  # Ctrl-C reached the program: the stage stops here, pending
        raise Interrupted(f"interrupted during the dumping run of jax {version} ({record.bundle})")
    return SideRun(version=version, python=prepared.plan.python, bundle=str(record.bundle), exit_code=record.exit_code)


def dumps(ctx: Context) -> str:
    good, bad = ctx.ends()
    found = DumpsFound(
        last_good=_dumping_run(ctx, good, f"last-good-{good}"), first_bad=_dumping_run(ctx, bad, f"first-bad-{bad}")
    )
    ctx.state.dumps = found
    return (
        f"jax {good}: exit {found.last_good.exit_code}, jax {bad}: exit {found.first_bad.exit_code} "
        "(HLO text and snapshots dumped)"
    )


def diff(ctx: Context) -> str:
    """The two dumping runs compared, and first-bad's program modules replayed with last-good as the reference:
    the first that mismatches is the module the later stages work on."""
    from xlatools.compare.diff import write_diff
    from xlatools.replay.outcome import against_a_reference, mismatch_figures, precision_only

    runs = ctx.state.dumps
    assert runs is not None
    compared, report = write_diff(Path(runs.last_good.bundle), Path(runs.first_bad.bundle), ctx.folder / "diff")
    differs = {m.b.name: not m.same_output for m in compared.modules}
    first = compared.first_divergence()
    found = DiffFound(
        json=str(ctx.folder / "diff" / "diff.json"),
        report=str(report),
        modules_differ=compared.modules_differ,
        first_divergence=first[1].label if first else None,
    )
    replayed = _replay_modules(ctx, runs)
    found.replay_bundle = str(replayed.record.bundle)
    found.modules = [
        ModuleVerdict(name=m.name, id=m.id, outcome=str(m.outcome), optimized_differs=differs.get(m.name))
        for m in replayed.record.modules
    ]
    ctx.state.diff = found
    # Against last good, never only against the snapshot first-bad's own run computed.
    wrong = next((m for m in replayed.record.modules if against_a_reference(m)), None)
    counted = f"{sum(differs.values())} of {len(differs)} modules' optimised HLO differ"
    if wrong is None and (precision := precision_only(replayed.record.modules)):
        found.precision_only = precision
        # A reduction or isolation of an earlier invocation worked on a module that no longer mismatches:
        # ISSUE.md must not show it beside "not a miscompile".
        ctx.state.reduce = ctx.state.isolate = None
        return (
            f"{counted}; no module miscompiles: {', '.join(precision)} differ from jax {runs.last_good.version} "
            "only by precision (they agree with it at full precision)"
        )
    if wrong is None:  # a module that crashes on first bad and runs on last good is the finding (triage/crash.py)
        from xlatools.triage.crash import diff_finding

        return diff_finding(found, replayed.record.modules, counted, runs.last_good.version, runs.first_bad.version)
    found.module = str(wrong.id) if wrong.id is not None else wrong.name
    found.module_name, found.module_label = wrong.name, wrong.label
    found.mismatch = mismatch_figures(wrong)
    return f"{counted}; module {wrong.label} mismatches: {found.mismatch}"


def _replay_modules(ctx: Context, runs: DumpsFound):
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.replay.plan import ReplayRequest

    request = ReplayRequest(
        source=Path(runs.first_bad.bundle),
        python=runs.first_bad.python,
        reference_pythons=[runs.last_good.python],
        atol=ctx.request.atol,
        rtol=ctx.request.rtol,
        platform=ctx.request.test.platform or Platform.AUTO,
        name="first-bad-vs-last-good",
    )
    return execute_replay(
        prepare(request), ctx.folder / "replay", ctx.argv + ["(modules against last good)"], ctx.reporter
    )


def passes(ctx: Context) -> str:
    from xlatools.bisect.api import PassRequest, bisect_passes
    from xlatools.bisect.engine import NoReduction
    from xlatools.triage.crash import passes_test

    _, bad = ctx.ends()
    module = ctx.state.diff.module_name if ctx.state.diff else None  # only passes that changed it are candidates
    test = passes_test(ctx.state, ctx.request.test)  # of a crash: bad = the same death, any other failure a skip
    request = PassRequest(test=test, python=ctx.python_of(bad), module=module, out=ctx.folder / "bisect")
    try:
        state = bisect_passes(request, ctx.reporter)
    except NoReduction as exc:  # a finding: no HLO pass of these makes the difference
        ctx.state.passes = PassesFound(folder=str(request.out), note=exc.message)
        return f"no culprit pass: {exc.message}"
    answer = state.result
    if answer is None:
        raise StageProblem(StageStatus.CANNOT_RUN, state.message or f"the bisection ended {state.status}", EXIT_MISSING)
    ctx.state.passes = PassesFound(
        folder=str(state.folder),
        culprits=[p.name for p in answer.passes],
        how=answer.how,
        diffs=[h.diff for h in answer.hlo],
    )
    summary = (
        f"culprit pass{'es' if len(answer.passes) > 1 else ''} on jax {bad}: "
        + ", ".join(p.name for p in answer.passes)
        + f" ({answer.how}; {len(state.steps)} steps)"
    )
    if answer.flaky:
        raise StageProblem(StageStatus.FAILED, f"{summary}; the boundary steps disagreed (flaky)", EXIT_FAILED)
    return summary


def reduce(ctx: Context) -> str:
    from xlatools.reduce.execute import prepare
    from xlatools.reduce.output import execute_reduce
    from xlatools.records.reduce import ReduceRequest

    runs, found = ctx.state.dumps, ctx.state.diff
    assert runs is not None and found is not None
    culprits = ctx.state.passes.culprits if ctx.state.passes else []
    request = ReduceRequest(
        source=Path(runs.first_bad.bundle),
        python=runs.first_bad.python,
        module=found.module,
        reference_pythons=[runs.last_good.python],
        atol=ctx.request.atol,
        rtol=ctx.request.rtol,
        jobs=ctx.request.jobs,
        culprit_pass=", ".join(culprits) or None,
        name=found.module_name,
    )
    if ctx.request.test.platform is not None:
        request = replace(request, platform=ctx.request.test.platform)
    if found.crash is not None:
        from xlatools.triage.crash import reduce_request

        request = reduce_request(request, found.crash)
    done = execute_reduce(prepare(request), ctx.folder / "reduce", ctx.argv + ["(reduce)"], ctx.reporter)
    result = done.record.result
    assert result is not None
    ctx.state.reduce = ReduceFound(
        bundle=str(done.record.bundle),
        instructions_before=result.instructions_before,
        instructions_after=result.instructions_after,
        oracle_calls=result.oracle_calls,
        flaky=result.flaky,
        issue=result.files.get("ISSUE.md"),
        reduced=result.files.get("reduced.hlo.txt"),
    )
    summary = (
        f"{result.instructions_before} -> {result.instructions_after} instructions "
        f"({result.oracle_calls} oracle calls): {result.verdict}"
    )
    if result.flaky:
        raise StageProblem(StageStatus.FAILED, f"{summary}; FLAKY: not interesting on every re-check", EXIT_FAILED)
    return summary


def isolate(ctx: Context) -> str:
    """Every instruction alone against last-good: of the reduced module when there is one (seconds), else of the
    module that differs."""
    from xlatools.reduce.isolate import IsolationRun
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.replay.plan import ReplayRequest

    runs, found, reduced = ctx.state.dumps, ctx.state.diff, ctx.state.reduce
    assert runs is not None and found is not None
    if found.crash is not None:
        from xlatools.triage.crash import NOT_ISOLATED

        return NOT_ISOLATED
    if reduced and reduced.reduced:
        source, modules, inputs = Path(reduced.reduced), [], str(Path(reduced.bundle) / "inputs.npz")
    else:
        source, modules, inputs = Path(runs.first_bad.bundle), [found.module or ""], None
    request = ReplayRequest(
        source=source,
        python=runs.first_bad.python,
        modules=modules,
        inputs=inputs,
        reference_pythons=[runs.last_good.python],
        atol=ctx.request.atol,
        rtol=ctx.request.rtol,
        platform=ctx.request.test.platform or Platform.AUTO,
        name="isolate",
    )
    isolating = IsolationRun.prepare(request)
    replayed = execute_replay(
        prepare(request),
        ctx.folder / "isolate",
        ctx.argv + ["(isolate)"],
        ctx.reporter,
        then=isolating.record_into(ctx.reporter),
    )
    seen = replayed.record.isolation
    if seen is None:
        raise StageProblem(StageStatus.CANNOT_RUN, "the isolation recorded nothing", EXIT_MISSING)
    which = "the reduced module" if reduced and reduced.reduced else f"module {found.module_label}"
    ctx.state.isolate = IsolateFound(
        bundle=str(replayed.record.bundle),
        file=seen.file,
        module=which,
        first_mismatch=seen.first_mismatch,
        first_mismatch_in_context=seen.first_mismatch_in_context,
        form=seen.form,
    )
    if seen.first_mismatch:
        return f"{which}: {seen.first_mismatch.name} = {seen.first_mismatch.opcode} mismatches on its own"
    if seen.first_mismatch_in_context:
        hit = seen.first_mismatch_in_context
        return f"{which}: no instruction mismatches alone; in context {hit.name} = {hit.opcode} is the first that does"
    from xlatools.reduce.isolate import NO_SINGLE

    return f"{which}: {NO_SINGLE}"


RUNNERS = {
    TriageStage.RELEASES: releases,
    TriageStage.DUMPS: dumps,
    TriageStage.DIFF: diff,
    TriageStage.PASSES: passes,
    TriageStage.REDUCE: handing_over(reduce),  # where its HLO text does not reproduce: the StableHLO (handover.py)
    TriageStage.ISOLATE: unless_handed_over(isolate),
}
