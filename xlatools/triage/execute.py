"""`xlatools triage`, end to end: the request -> the test -> the state -> every stage -> ISSUE.md.

plan_triage() says what an invocation would do (nothing runs, nothing is written); triage() runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.bundle import utc_now
from xlatools.errors import UsageError
from xlatools.records.triage import TriageSpec, TriageState
from xlatools.triage.plan import TriageRequest, open_state, save
from xlatools.triage.stages import ORDER, PlannedStage, exit_code, plan_stages, run_stages
from xlatools.vocab import TriageStage

if TYPE_CHECKING:
    from xlatools.bisect.checks import ProgramTest
    from xlatools.console import Reporter


def _test(request: TriageRequest, reporter: Reporter) -> ProgramTest:
    from xlatools.bisect.checks import ProgramTest, build_test
    from xlatools.triage.plan import check_request

    from xlatools.bisect.metric_test import MetricTest

    check_request(request)
    test = build_test(request.test, reporter)
    if isinstance(test, MetricTest):  # triage --metric (noise-aware): the run is the same program
        test = test.inner
    if not isinstance(test, ProgramTest):
        raise UsageError(
            "triage runs a program (after --), not a repro pack",
            hint="its dumping runs and pass bisection need the program itself",
        )
    return test


def spec_of(request: TriageRequest, test: ProgramTest) -> TriageSpec:
    return TriageSpec(
        good=request.good,
        bad=request.bad,
        python_version=request.python_version,
        platform=request.platform,
        test=test.describe(),
        atol=request.atol,
        rtol=request.rtol,
        requirements=list(request.requirements) or None,
    )


def found(state: TriageState, stage: TriageStage) -> bool:
    """Whether `stage` left what later stages need (diff: a module that mismatches)."""
    if stage == TriageStage.DIFF:
        return state.diff is not None and state.diff.module is not None
    if stage == TriageStage.REPORT:
        return state.issue is not None
    return getattr(state, stage.value) is not None


def basis(state: TriageState, stage: TriageStage) -> str:
    """What `stage` is computed from: a stage done before runs again when this changed."""
    good, bad = (
        (state.releases.last_good, state.releases.first_bad) if state.releases else (state.spec.good, state.spec.bad)
    )
    dumps, diff, passes, reduced = state.dumps, state.diff, state.passes, state.reduce
    module = diff.module if diff else None
    return {
        TriageStage.DUMPS: f"{good}..{bad}",
        TriageStage.DIFF: f"{dumps.last_good.bundle}|{dumps.first_bad.bundle}" if dumps else "",
        TriageStage.PASSES: f"{bad}|{diff.module_name if diff else None}",
        TriageStage.REDUCE: f"{dumps.first_bad.bundle if dumps else None}|{module}|{passes.culprits if passes else []}",
        TriageStage.ISOLATE: f"{dumps.first_bad.bundle if dumps else None}|{module}|{reduced.bundle if reduced else None}",
    }.get(stage, "")


def plan_triage(request: TriageRequest, reporter: Reporter) -> tuple[TriageState, list[PlannedStage]]:
    """`--dry-run`: the recorded state (if any) and what each stage would do now."""
    test = _test(request, reporter)
    state = open_state(request.out, spec_of(request, test), request.fresh, create=False)
    return state, plan_stages(state.record, request.skip, lambda s: basis(state, s), lambda s: found(state, s))


def _report(state: TriageState, program: str, argv: list[str]) -> Callable[[], str]:
    def write() -> str:
        from xlatools.fsutil import atomic_write_text
        from xlatools.redact import redact_text
        from xlatools.triage.report import ISSUE, render

        issue = state.reduce.issue if state.reduce else None
        text = Path(issue).read_text() if issue and Path(issue).is_file() else None
        path = Path(state.folder or ".") / ISSUE
        atomic_write_text(path, redact_text(render(state, program, argv, text)))
        state.issue = str(path)
        return f"{path}"

    return write


def triage(request: TriageRequest, argv: list[str], reporter: Reporter) -> TriageState:
    """Run (or continue) the triage; the state says what each stage found and how it ended."""
    from xlatools.triage.runners import RUNNERS, Context

    from xlatools.bisect.envs import check_python_available

    test = _test(request, reporter)
    check_python_available(request.python_version)  # every stage makes release environments of it
    if request.test.rule.metric is not None:  # a slowdown or a growth: its own stages (triage/perf.py)
        from xlatools.triage.perf import perf_triage

        return perf_triage(request, spec_of(request, test), argv, reporter)  # type: ignore[return-value]
    state = open_state(request.out, spec_of(request, test), request.fresh)
    reporter.step(f"triage of {test.program.label}: jax {request.good} (good) .. {request.bad} (bad) in {state.folder}")
    context = Context(request, state, test, reporter, argv)

    def runner(stage: TriageStage) -> Callable[[], str]:
        def run() -> str:
            setattr(state, stage.value, None)  # a stage that runs again replaces (or loses) its finding
            return RUNNERS[stage](context)

        return run

    runners = {stage: runner(stage) for stage in ORDER if stage in RUNNERS}
    program = test.program
    runners[TriageStage.REPORT] = _report(
        state, Path(program.label).name if program.kind == "script" else program.label, argv
    )
    run_stages(
        state.record,
        runners,
        request.skip,
        lambda s: basis(state, s),
        lambda s: found(state, s),
        lambda: save(state),
        utc_now,
        reporter,
    )
    state.exit_code = exit_code(state.stages)
    save(state)
    return state
