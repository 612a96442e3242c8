"""`xlatools replay`: replay dumped HLO modules in a target interpreter (`repro_cmd.py`: portable packs)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.options import (
    OldModuleFlag,
    AtolOption,
    DisablePassOption,
    DryRunOption,
    InputsOption,
    JsonOption,
    NondeterministicOption,
    OutOption,
    PlatformOption,
    PrecisionOption,
    ProcessOption,
    PythonOption,
    ReferenceOption,
    ReferencePythonOption,
    RtolOption,
    SeedOption,
    SourceFormOption,
    TimeoutOption,
    XlaFlagOption,
    followed_run,
    invocation,
)
from xlatools.vocab import Platform, PrecisionMode, SourceForm


def replay(
    source: Path = typer.Argument(
        ..., help="A run bundle, an XLA dump folder, or one file: HLO text, .hlo.pb, *.snapshot.*.pb, .mlir."
    ),
    module: List[str] = typer.Option(
        [],
        "--module",
        help="Module id or name of a bundle/dump (repeatable; default: the program's own modules).",
    ),
    old_m: OldModuleFlag = None,
    include_all: bool = typer.Option(
        False, "--all", help="Also replay jax's helper modules (jit_iota, jit_convert_element_type, ...)."
    ),
    source_from: SourceFormOption = SourceForm.AUTO,
    snapshot: Optional[int] = typer.Option(
        None,
        "--snapshot",
        help="Which execution's snapshot gives the arguments and result: 0 the first (default), 1 the second, "
        "-1 the last.",
    ),
    python: PythonOption = None,
    inputs: InputsOption = None,
    seed: SeedOption = 0,
    reference: ReferenceOption = [],
    reference_python: ReferencePythonOption = [],
    reference_xla_flag: List[str] = typer.Option(
        [], "--reference-xla-flag", help="An XLA flag for the reference runs only (repeatable)."
    ),
    atol: AtolOption = 1e-3,
    rtol: RtolOption = 1e-3,
    iterations: int = typer.Option(
        1, "--iterations", "-n", max=10_000_000, help="Run the compiled module N times (timings: min/median)."
    ),
    xla_flag: XlaFlagOption = [],
    disable_pass: DisablePassOption = [],
    no_opt: bool = typer.Option(
        False, "--no-opt", help="Backend optimisation level 0 (--xla_backend_optimization_level=0)."
    ),
    nondeterministic: NondeterministicOption = False,
    platform: PlatformOption = Platform.AUTO,
    dump: List[str] = typer.Option(
        [], "--dump", help="A dump preset for the replay itself, e.g. hlo or passes (repeatable)."
    ),
    print_literals: bool = typer.Option(
        False, "--print-literals", help="Print inputs and outputs (long arrays abbreviated)."
    ),
    out: OutOption = Path("artifacts"),
    name: Optional[str] = typer.Option(None, "--name", help="Bundle name (default: replay-<module or source>)."),
    timeout: TimeoutOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
    process: ProcessOption = None,
    isolate: bool = typer.Option(
        False,
        "--isolate",
        help="Also run every instruction of the module alone against the "
        "reference (one module, one reference); the table and the first mismatch go into the bundle.",
    ),
    precision: PrecisionOption = PrecisionMode.AUTO,
) -> None:
    """Compile and run dumped HLO modules in a target interpreter; compare with the snapshot and references.

    Defaults: --python this interpreter; --xla-flag applies to the test run only; --timeout is per
    target process. Exit: 0 all match, 1 a mismatch or a failure (compile-error, runtime-error,
    crash), 2 bad input, 3 environment missing, 124 a target timed out, 130 interrupted."""
    import json

    from xlatools.console import Reporter
    from xlatools.records import to_json
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.replay.plan import ReplayRequest
    from xlatools.run.target import resolve_python

    source = followed_run(source)
    request = ReplayRequest(
        source=source.expanduser().absolute(),
        python=resolve_python(python),
        modules=list(module),
        include_all=include_all,
        source_from=source_from,
        inputs=inputs,
        seed=seed,
        references=list(reference),
        reference_pythons=[resolve_python(p) for p in reference_python],
        reference_xla_flags=list(reference_xla_flag),
        atol=atol,
        rtol=rtol,
        iterations=iterations,
        xla_flags=list(xla_flag),
        disable_passes=list(disable_pass),
        no_opt=no_opt,
        platform=platform or Platform.AUTO,
        dump=list(dump),
        print_literals=print_literals,
        timeout=timeout,
        name=name,
        process=process,
        snapshot=snapshot,
        deterministic=False if nondeterministic else None,
        precision=precision,
    )
    prepared = prepare(request)
    isolating = _isolation(request) if isolate else None  # checked before anything runs
    if dry_run:
        typer.echo(json.dumps(to_json(prepared.plan.record()), indent=2) if as_json else _plan_text(prepared.plan))
        return
    reporter = Reporter()
    result = execute_replay(
        prepared, out, invocation().argv, reporter, then=isolating.record_into(reporter) if isolating else None
    )
    _report(result, as_json, print_literals, reporter)
    raise typer.Exit(result.exit_code)


def _report(result, as_json: bool, print_literals: bool, reporter) -> None:
    """The replay's end: a line in the CI job summary, then --json's keys or the table."""
    import json

    from xlatools.console import append_job_summary
    from xlatools.records import to_json

    record = result.record
    append_job_summary(
        f"### xlatools replay\n\n- {len(record.modules)} module(s): {record.status} "
        f"(exit {record.exit_code})\n- bundle: `{record.bundle}`\n"
    )
    if as_json:
        data = to_json(record)
        typer.echo(
            json.dumps({k: data.get(k) for k in ("status", "exit_code", "bundle", "modules", "isolation")}, indent=2)
        )
    else:
        _print_result(record, result.table, print_literals, reporter)


def _isolation(request):
    """`--isolate`: the same module, interpreters, flags and inputs as a reduce plan (its mismatch oracle judges each
    instruction), prepared before the replay starts."""
    from xlatools.reduce.isolate import IsolationRun

    return IsolationRun.prepare(request)


def _plan_text(plan) -> str:
    lines = [f"source:  {plan.request.source} ({plan.source_kind})"]
    lines += [f"module:  {m.label}  " + ", ".join(f"{k}={v}" for k, v in m.files().items()) for m in plan.modules]
    for run in plan.runs:
        lines.append(
            f"run:     {run.label}: {run.python} platform={run.platform} XLA_FLAGS={' '.join(run.xla_flags) or '-'}"
        )
    lines += [f"note:    {n}" for n in plan.notes]
    return "\n".join(lines)


def _print_result(record, table: str, print_literals: bool, reporter) -> None:
    """The table (and --print-literals' values) on stdout, the replay's data; notes and the outcome on stderr."""
    reporter.info("")
    typer.echo(table)
    for note in record.plan.notes if record.plan else []:  # helpers left out, modules skipped, nothing compared, ...
        reporter.info(f"note: {note}")
    for module in record.modules:
        check = module.precision
        if check and check.note:  # which instructions were raised, and what that showed (even when quiet)
            reporter.result(f"\nnote: {module.label}: {check.note}")
        for note in module.notes:
            if not (check and note == check.note):
                reporter.info(f"\n{module.label}: {note}")
        for run in module.runs:
            if run.failure:
                reporter.info(f"\n{module.name} ({run.label}): {run.failure}: {run.message}")
                for line in run.log_tail[-8:]:
                    reporter.info(f"  | {line}")
            literals = Path(run.dir, "literals.txt") if run.dir else None
            if print_literals and literals and literals.is_file():
                typer.echo(f"\n{module.name} ({run.label}) literals:\n" + literals.read_text())
    reporter.result(f"\n{record.status} (exit {record.exit_code})  bundle: {record.bundle}")
    reporter.info(f"HTML report: xlatools report {record.bundle} -o report.html")
