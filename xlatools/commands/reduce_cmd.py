"""`xlatools reduce`: shrink an HLO module to the smallest one that still shows the bug."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from xlatools.commands.options import (
    OldModuleFlag,
    AtolOption,
    DisablePassOption,
    DryRunOption,
    EnumChoice,
    InputsOption,
    JsonOption,
    OutOption,
    PlatformOption,
    PrecisionOption,
    PythonOption,
    QuietOption,
    ReferenceOption,
    ReferencePythonOption,
    RtolOption,
    SeedOption,
    TimeoutOption,
    XlaFlagOption,
    invocation,
)
from xlatools.vocab import Platform, PrecisionMode, ReduceStrategy

StrategyOption = Annotated[
    ReduceStrategy,
    typer.Option(
        "--strategy",
        click_type=EnumChoice(ReduceStrategy),
        help="full (every reduction, docs/reduce.md), or ddmin alone (delta debugging over the entry, for comparison).",
    ),
]


def reduce(
    source: Path = typer.Argument(..., help="A run bundle, a dump folder, HLO text/proto, a snapshot or a repro pack."),
    module: Optional[str] = typer.Option(None, "--module", help="Module id or name (when SOURCE holds several)."),
    old_m: OldModuleFlag = None,
    python: PythonOption = None,
    reference: ReferenceOption = [],
    reference_python: ReferencePythonOption = [],
    error: Optional[str] = typer.Option(
        None, "--error", help="Oracle: a compile/runtime error or crash whose message matches this regex."
    ),
    script: Optional[str] = typer.Option(
        None,
        "--script",
        help="Oracle: a command run with the candidate's HLO file as last argument; 1-127 interesting, 0 not, 125 skip.",
    ),
    inputs: InputsOption = None,
    seed: SeedOption = 0,
    atol: AtolOption = 1e-3,
    rtol: RtolOption = 1e-3,
    xla_flag: XlaFlagOption = [],
    disable_pass: DisablePassOption = [],
    from_bisect: Optional[Path] = typer.Option(
        None, "--from-bisect", help="A `bisect passes` folder: ISSUE.md names its culprit pass."
    ),
    platform: PlatformOption = Platform.AUTO,
    jobs: int = typer.Option(
        1, "--jobs", "-j", min=1, help="Candidates run side by side (each slot keeps its own target processes)."
    ),
    timeout: TimeoutOption = None,
    max_time: Optional[float] = typer.Option(
        None, "--max-time", help="Stop reducing after this many seconds (the best so far is the result)."
    ),
    rechecks: int = typer.Option(
        3, "--rechecks", min=1, max=100, help="Re-run the oracle on the result this many times (flaky: exit 1)."
    ),
    strategy: StrategyOption = ReduceStrategy.FULL,
    fresh: bool = typer.Option(False, "--fresh", help="Forget the saved state of this reduction and start over."),
    out: OutOption = Path("artifacts"),
    name: Optional[str] = typer.Option(None, "--name", help="Bundle name (default: reduce-<module>)."),
    quiet: QuietOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
    precision: PrecisionOption = PrecisionMode.AUTO,
) -> None:
    """Reduce an HLO module to a minimal one that is still interesting; write reduced.hlo.txt, inputs, a repro pack and ISSUE.md.

    The oracle: --reference/--reference-python (outputs differ), --error REGEX, --script CMD, or
    the snapshot's recorded result. The state lives in OUT/.reduce-state: the same command continues.
    Exit: 0 reduced, 1 the result is flaky, 2 bad input (also: the input is not interesting),
    3 environment missing, 130 interrupted (run the same command again to continue)."""
    import json
    import os

    from xlatools.console import Reporter
    from xlatools.records import to_json
    from xlatools.reduce.execute import prepare
    from xlatools.reduce.plan import ReduceRequest
    from xlatools.run.target import resolve_python

    request = ReduceRequest(
        source=source.expanduser().absolute(),
        python=resolve_python(python),
        module=module,
        references=list(reference),
        reference_pythons=[resolve_python(p) for p in reference_python],
        error=error,
        script=script,
        inputs=inputs,
        seed=seed,
        atol=atol,
        rtol=rtol,
        xla_flags=list(xla_flag),
        disable_passes=list(disable_pass),
        platform=platform or Platform.AUTO,
        jobs=jobs,
        timeout=timeout,
        max_time=max_time,
        rechecks=rechecks,
        strategy=strategy,
        culprit_pass=culprit_of(from_bisect) if from_bisect else None,
        name=name,
        precision=precision,
    )
    if dry_run:  # a pack is unpacked where nothing stays
        import tempfile

        with tempfile.TemporaryDirectory(prefix="xlatools-reduce-") as scratch:
            plan = prepare(request, Path(scratch)).plan
            typer.echo(json.dumps(to_json(plan.record()), indent=2) if as_json else _plan_text(plan))
        return
    prepared = prepare(request, Path(os.path.abspath(out)) / ".reduce-state")
    from xlatools.reduce.output import execute_reduce

    reporter = Reporter(quiet=bool(quiet))
    done = execute_reduce(prepared, out, invocation().argv, reporter, fresh=fresh)
    _print_result(done, as_json, reporter)
    raise typer.Exit(done.exit_code)


def _print_result(done, as_json: bool, reporter) -> None:
    """The reduction's end: a line in the CI job summary, then --json or the lines for people."""
    import json

    from xlatools.console import append_job_summary
    from xlatools.records import to_json

    record, result = done.record, done.record.result
    append_job_summary(
        f"### xlatools reduce\n\n- {result.instructions_before} -> {result.instructions_after} "
        f"instructions, {result.oracle_calls} oracle calls: {record.status}\n- bundle: `{record.bundle}`\n"
    )
    if as_json:
        typer.echo(
            json.dumps(
                {"status": record.status, "exit_code": done.exit_code, "bundle": record.bundle, **to_json(result)},
                indent=2,
            )
        )
    else:
        reporter.result(
            f"\n{result.instructions_before} -> {result.instructions_after} instructions, "
            f"{result.oracle_calls} oracle calls, {result.seconds:.1f} s"
            + (f" (stopped: {result.stopped})" if result.stopped else "")
        )
        _print_end(result.ended, reporter)
        reporter.result(
            f"result: {result.verdict}" + ("  FLAKY: not interesting on every re-check" if result.flaky else "")
        )
        reporter.result(f"inputs: {_inputs(record)}")
        crash = ", native-backtrace.txt" if record.native_backtrace else ""
        reporter.result(f"bundle: {record.bundle}  (ISSUE.md, reduced.hlo.txt, inputs.npz, repro.tar.gz{crash})")


def _print_end(ended, reporter) -> None:
    """Why the reduction stopped where it did, and what would take it further."""
    if ended is None:
        return
    reporter.result(f"stopped: {ended.reason}")
    for line in ended.strategies:
        reporter.result(f"  {line}")
    for line in ended.not_judged:
        reporter.result(f"  not judged: {line}")
    for line in ended.further:
        reporter.result(f"  further: {line}")


def culprit_of(folder: Path) -> str:
    """The culprit pass(es) a finished `bisect passes` folder names."""
    from xlatools.bisect.state import load
    from xlatools.errors import UsageError
    from xlatools.vocab import BisectStatus

    state = load(folder.expanduser())
    if state is None or state.kind != "passes":
        raise UsageError(f"--from-bisect {folder}: not a `bisect passes` folder (no bisect.json of kind passes)")
    passes = [p.name for p in state.result.passes] if state.result else []
    if state.status != BisectStatus.DONE or not passes:
        raise UsageError(
            f"--from-bisect {folder}: that bisection named no culprit pass (status {state.status})",
            hint="finish it first: run the same `xlatools bisect passes` command again",
        )
    return ", ".join(passes)


def _inputs(record) -> str:
    from xlatools.replay.outcome import describe_inputs

    return describe_inputs(record.plan.input_source if record.plan else None)


def _plan_text(plan) -> str:
    from xlatools.replay.outcome import describe_inputs

    test, reference, request = plan.test, plan.reference, plan.request
    lines = [
        f"source:    {request.source}",
        f"module:    {plan.module.label}  " + ", ".join(f"{k}={v}" for k, v in plan.module.files().items()),
        f"oracle:    {plan.oracle.describe()}",
        f"inputs:    {describe_inputs(plan.record().input_source)}",
        f"test:      {test.python} platform={test.platform} XLA_FLAGS={' '.join(test.xla_flags) or '-'}",
    ]
    if reference:
        lines.append(f"reference: {reference.python} platform={reference.platform}")
    lines.append(f"strategy:  {request.strategy}, --jobs {request.jobs}, {request.rechecks} re-checks")
    return "\n".join(lines)
