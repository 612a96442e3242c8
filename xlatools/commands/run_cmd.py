"""`xlatools run`: run a program with debug presets and collect a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import (
    AccountOption,
    DryRunOption,
    ExecutorOption,
    ExitCodeOption,
    JsonOption,
    PartitionOption,
    QuietOption,
    SbatchOption,
    TimeLimitOption,
    executor_choice,
    invocation,
)
from xlatools.commands.program_options import ProgramOptions, with_program_options
from xlatools.vocab import ExitCodeMode


# What --json prints of the run manifest (the whole record is the bundle's manifest.json).
JSON_KEYS = tuple(
    "status exit_code returncode signal program_outcome native_backtrace bundle duration_s program jax frontend"
    " presets xla_flags dump smoke notes warnings archive processes first_failed coordinator slurm metrics"
    " stuck".split()
)


@with_program_options
def run(
    *,
    program_options: ProgramOptions,
    dump: bool = typer.Option(False, "--dump", help="Turn on the profile's dump preset (default: hlo)."),
    archive: bool = typer.Option(False, "--archive", help="Also write <bundle>.tar.gz."),
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
    quiet: QuietOption = None,
    exit_code: ExitCodeOption = ExitCodeMode.XLATOOLS,
    processes: Optional[int] = typer.Option(
        None,
        "--processes",
        help="Run N processes of the program as one jax distributed job on this machine (default 1; smoke:multiprocess 2); see docs/multiprocess.md.",
    ),
    devices_per_process: int = typer.Option(
        1, "--devices-per-process", help="With --processes: devices of each process (CPU devices, or GPUs by index)."
    ),
    record_inputs: bool = typer.Option(
        False,
        "--record-inputs",
        help="Record each executed module's arguments and results (replay reads them as snapshots); automatic where snapshots are asked of a GPU, which writes none.",
    ),
    measure_calls: Optional[str] = typer.Option(
        None,
        "--measure-calls",
        help="Synchronise and time the first N calls of each compiled module (default 20; 0: none; all: every call, jax's fast path off); see docs/metrics.md.",
    ),
    metrics: bool = typer.Option(
        True, "--metrics/--no-metrics", help="Measure compile times, memory, call times and peak RSS (docs/metrics.md)."
    ),
    stall: Optional[float] = typer.Option(
        None,
        "--stall",
        help="End the run (exit 124) when no process printed anything or compiled or ran a module for this many seconds; every process's stacks are read first, as at --timeout (docs/hangs.md).",
    ),
    executor: ExecutorOption = None,
    partition: PartitionOption = None,
    account: AccountOption = None,
    time_limit: TimeLimitOption = None,
    sbatch_option: SbatchOption = [],
) -> None:
    """Run a program (a smoke program, a script or a module) with XLA dump/log presets into a fresh bundle.

    Defaults: --python this interpreter; --platform the profile's, else auto; quiet when VLOG output
    is asked for. With --json the program's stdout goes to stderr."""
    import os

    from xlatools.cluster.spec import resolve
    from xlatools.console import Reporter
    from xlatools.run.execute import execute_plan, prepare, profile_run
    from xlatools.run.observer import parse_measure_calls

    argv = invocation().argv
    cluster = resolve(executor_choice(executor, partition, account, time_limit, sbatch_option), program_options.profile)
    if cluster is not None and not dry_run:
        from xlatools.cluster.slurm import require

        require()  # no Slurm here: exit 3 before anything is probed
    from xlatools.run.multiprocess import check_counts, process_limit

    check_counts(processes, devices_per_process, process_limit(local=cluster is None))  # before any launch
    reporter = Reporter(quiet=bool(quiet))
    cwd = Path.cwd()
    request = program_options.run_request(
        argv, cwd, dump=dump, quiet=quiet, processes=processes, devices_per_process=devices_per_process
    )
    request.record_inputs = record_inputs
    request.measure_calls = parse_measure_calls(measure_calls) if metrics else None
    request.record_inputs, request.stall = record_inputs, stall
    profile_info, define_presets = profile_run(program_options.profile)
    caller_env = dict(os.environ)
    prepared = prepare(request, profile_info, define_presets, caller_env, cwd, reporter)
    if dry_run:
        _print_dry_run(prepared, cluster, as_json)
        return
    if cluster is not None:
        from xlatools.cluster.slurm import preflight

        preflight(cluster, max(1, len(prepared.plan.processes)))  # a wrong partition/account: exit 2, no bundle
    outcome = execute_plan(
        prepared,
        program_options.out,
        argv,
        caller_env,
        reporter,
        archive=archive,
        echo_stdout_to_stderr=as_json,
        exit_code_mode=exit_code,
        cluster=cluster,
    )
    _print_result(outcome, prepared.plan.quiet, as_json, reporter)
    raise typer.Exit(outcome.exit_code)


def _print_dry_run(prepared, cluster, as_json: bool) -> None:
    """--dry-run: the plan (secrets hidden, as in manifests), as JSON or for a person."""
    import json

    from xlatools.records import to_json
    from xlatools.redact import redact

    if cluster is not None and prepared.plan.processes:  # as the job runs it: jax's coordinator comes from Slurm
        from dataclasses import replace

        from xlatools.run.slurm_launch import slurm_coordinator

        prepared = replace(prepared, plan=slurm_coordinator(prepared.plan, cluster)[0])
    if as_json:
        plan = redact(prepared.plan.to_json())
        checks = prepared.flag_checks
        typer.echo(json.dumps({"plan": plan, "target": to_json(prepared.target), "flag_checks": checks}, indent=2))
    else:
        _print_plan(prepared)
        _print_job(prepared, cluster)


def _print_result(outcome, quiet, as_json: bool, reporter) -> None:
    """The finished run: a line in the CI job summary, then --json's keys or the table."""
    import json

    from xlatools.console import append_job_summary

    record = outcome.record
    append_job_summary(
        f"### xlatools run\n\n- `{record.program.label if record.program else '-'}`: {record.status} "
        f"(exit {record.exit_code}, {record.duration_s} s)\n- bundle: `{record.bundle}`\n"
    )
    if as_json:
        from xlatools.records import to_json

        data = to_json(record)
        typer.echo(json.dumps({k: data.get(k) for k in JSON_KEYS}, indent=2))
    else:
        _print_outcome(record, outcome.table, quiet, reporter)


def _print_plan(prepared) -> None:
    import shlex

    from xlatools import console

    plan, target = prepared.plan, prepared.target
    write = console.out().print
    esc = console.escape
    write(f"program:  {esc(plan.program.label)}")
    versions = f"jax {target.jax}, jaxlib {target.jaxlib}" if target.frontend == "jax" else target.described
    write(f"python:   {esc(plan.python)} ({esc(versions)}, {target.backend})")
    write(f"presets:  {', '.join(f'{p.kind}:{p.name}' for p in plan.presets) or '-'}")
    write("XLA_FLAGS:")
    for flag in plan.xla_flags:
        write(f"  {esc(flag)}    [dim]# {esc(plan.xla_flag_sources.get(flag, ''))}[/dim]")
    if plan.tf_xla_flags:
        write("TF_XLA_FLAGS:")
        for flag in plan.tf_xla_flags:
            write(f"  {esc(flag)}    [dim]# {esc(plan.tf_xla_flag_sources.get(flag, ''))}[/dim]")
    for item in plan.overridden_flags:
        write(
            f"  [yellow]overridden:[/yellow] {esc(item.flag)} ({esc(str(item.origin))}) by {esc(item.by)} ({esc(str(item.source))})"
        )
    write("environment changes:")
    from xlatools.redact import redact_env

    for change in plan.env_changes:
        value = "(removed)" if change.value is None else redact_env({change.name: change.value})[change.name]
        write(f"  {esc(change.name)}={esc(value)}    [dim]# {esc(str(change.source))}[/dim]")
    write(f"bundle:   <out>/<UTC time>-{esc(plan.name)}-<id>/  (dumps: {esc(plan.dump_dir or 'none')})")
    write(f"timeout:  {plan.timeout if plan.timeout else 'none'}")
    write(f"argv:     {esc(shlex.join(plan.argv))}")
    for process in plan.processes:
        own = " ".join(f"{k}={v}" for k, v in process.env.items())
        write(
            f"process {process.id}: {esc(own)}  (logs {esc(Path(process.stdout).name)}, {esc(Path(process.stderr).name)}"
            f"{'; dump ' + esc(process.dump_dir) if process.dump_dir else ''})"
        )
    for note in plan.notes:
        write(f"note:     {esc(note)}")


def _print_job(prepared, cluster) -> None:
    """--dry-run --executor slurm: the job script and the sbatch/srun lines the run would use."""
    if cluster is None:
        return
    from xlatools import console
    from xlatools.cluster.plan import JOB_FOLDER, plan_job

    plan = prepared.plan
    job = plan_job(cluster, plan.name, f"<bundle>/{JOB_FOLDER}", max(1, len(plan.processes)), plan.python, plan.cwd)
    write = console.out().print
    write(f"executor: slurm ({console.escape(cluster.describe())}; from {console.escape(cluster.source)})")
    for line in job.lines():
        write(console.escape(line))


def _print_outcome(record, table: str, quiet: bool, reporter) -> None:
    from xlatools.run.group_record import failing_log

    log = failing_log(record)
    if (quiet or record.processes) and record.status != "ok":
        reporter.result(f"last lines of {record.bundle}/{log}:")
        reporter.result(_tail(Path(record.bundle) / log, 20))
    for process in record.processes or []:
        first = "  (failed first)" if process.first_failure else ""
        reporter.result(f"process {process.id}: {process.status} ({process.outcome}, {process.duration_s} s){first}")
    slurm = [record.slurm.killed_by_slurm, *record.slurm.notes] if record.slurm else []
    for note in record.notes:
        # the ones that explain an outcome (a Slurm job's: its state and reason when Slurm ended it)
        if note.startswith(("vmodule pattern", "native backtrace", "the program died in")) or note in slurm:
            reporter.result(f"note: {note}")
    for warning in record.warnings or []:
        reporter.warn(warning)
    dump = record.dump
    if dump and dump.modules:
        reporter.info(f"\nXLA dump: {len(dump.modules)} modules, {dump.files} files, {dump.bytes} bytes")
        reporter.info(table)
    elif dump:
        reporter.info("\nXLA dump: no modules were dumped (did the program compile anything?)")
    program = "" if record.status == "ok" else f"; program {record.program_outcome}"
    reporter.result(
        f"{record.status} (exit {record.exit_code}{program}, {record.duration_s} s)  bundle: {record.bundle}"
    )
    if dump and dump.modules:
        reporter.info(f"read it with: xlatools inspect {record.bundle} [--module ID|NAME]")


def _tail(path, lines: int) -> str:
    from xlatools.fsutil import tail_lines

    return "\n".join(tail_lines(path, lines)) or "(no log)"
