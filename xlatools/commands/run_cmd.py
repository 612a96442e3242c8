"""`xlatools run`: run a program with debug presets and collect a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.options import (DryRunOption, ExitCodeOption, JsonOption, OutOption, PlatformOption, ProfileOption,
                                       PythonOption, QuietOption, TimeoutOption, XlaFlagOption, invocation)
from xlatools.vocab import ExitCodeMode


def run(
    program: Optional[str] = typer.Argument(None, help="A .py file or smoke:NAME (smoke:all, the default, runs every smoke program)."),
    args: Optional[List[str]] = typer.Argument(None, help="Arguments for the program, after --."),
    module: Optional[str] = typer.Option(None, "-m", help="Run a module (python -m MODULE) instead of a file."),
    profile: ProfileOption = None,
    dump: bool = typer.Option(False, "--dump", help="Turn on the profile's dump preset (default: hlo)."),
    preset: List[str] = typer.Option([], "--preset", help="A dump, log, jax or frontend preset (repeatable); see `xlatools presets list`."),
    xla_flag: XlaFlagOption = [],
    vmodule: List[str] = typer.Option([], "--vmodule", help="C++ VLOG level per source file, FILE=N (repeatable)."),
    vlog: Optional[int] = typer.Option(None, "--vlog", help="C++ VLOG level everywhere (TF_CPP_MAX_VLOG_LEVEL)."),
    env: List[str] = typer.Option([], "--env", help="Set an environment variable for the program, K=V (repeatable)."),
    python: PythonOption = None,
    frontend: Optional[str] = typer.Option(None, "--frontend", help="jax, tensorflow or torch-xla (default: the profile's, a frontend preset's, else detected)."),
    out: OutOption = Path("artifacts"),
    name: Optional[str] = typer.Option(None, "--name", help="Bundle name (default: from the program)."),
    timeout: TimeoutOption = None,
    platform: PlatformOption = None,
    archive: bool = typer.Option(False, "--archive", help="Also write <bundle>.tar.gz."),
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
    quiet: QuietOption = None,
    exit_code: ExitCodeOption = ExitCodeMode.XLATOOLS,
    processes: Optional[int] = typer.Option(None, "--processes", help="Run N processes of the program as one jax distributed job on this machine (default 1; smoke:multiprocess 2); see docs/multiprocess.md."),
    devices_per_process: int = typer.Option(1, "--devices-per-process", help="With --processes: devices of each process (CPU devices, or GPUs by index)."),
) -> None:
    """Run a program (a smoke program, a script or a module) with XLA dump/log presets into a fresh bundle.

    Defaults: --python this interpreter; --platform the profile's, else auto; quiet when VLOG output
    is asked for. With --json the program's stdout goes to stderr."""
    import json
    import os

    from xlatools.console import Reporter
    from xlatools.run.execute import execute_plan, prepare, profile_run
    from xlatools.run.plan import RunRequest
    from xlatools.run.program import parse_program, refuse_program_and_module

    argv = invocation().argv
    refuse_program_and_module(argv, program, module)
    reporter = Reporter(quiet=bool(quiet))
    cwd = Path.cwd()
    profile_info, define_presets = profile_run(profile)
    request = RunRequest(
        program=parse_program(program, module, list(args or []), cwd),
        python=python,
        dump=dump, presets=list(preset), xla_flags=list(xla_flag), vmodule=list(vmodule), vlog=vlog,
        env=list(env), platform=platform, timeout=timeout, name=name, quiet=quiet, frontend=frontend,
        processes=processes, devices_per_process=devices_per_process,
    )
    caller_env = dict(os.environ)
    prepared = prepare(request, profile_info, define_presets, caller_env, cwd, reporter)
    if dry_run:
        from xlatools.records import to_json
        from xlatools.redact import redact

        plan = redact(prepared.plan.to_json())  # secrets hidden, as in manifests
        if as_json:
            typer.echo(json.dumps({"plan": plan, "target": to_json(prepared.target), "flag_checks": prepared.flag_checks}, indent=2))
        else:
            _print_plan(prepared)
        return
    outcome = execute_plan(prepared, out, argv, caller_env, reporter, archive=archive, echo_stdout_to_stderr=as_json,
                           exit_code_mode=exit_code)
    record = outcome.record
    from xlatools.console import append_job_summary

    append_job_summary(f"### xlatools run\n\n- `{record.program.label if record.program else '-'}`: {record.status} "
                       f"(exit {record.exit_code}, {record.duration_s} s)\n- bundle: `{record.bundle}`\n")
    if as_json:
        from xlatools.records import to_json

        data = to_json(record)
        keep = ("status", "exit_code", "returncode", "signal", "program_outcome", "bundle", "duration_s", "program",
                "jax", "frontend", "presets", "xla_flags", "dump", "smoke", "notes", "archive", "processes",
                "first_failed", "coordinator")
        typer.echo(json.dumps({k: data.get(k) for k in keep}, indent=2))
    else:
        _print_outcome(record, outcome.table, prepared.plan.quiet, reporter)
    raise typer.Exit(outcome.exit_code)


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
        write(f"  [yellow]overridden:[/yellow] {esc(item.flag)} ({esc(str(item.origin))}) by {esc(item.by)} ({esc(str(item.source))})")
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
        write(f"process {process.id}: {esc(own)}  (logs {esc(Path(process.stdout).name)}, {esc(Path(process.stderr).name)}"
              f"{'; dump ' + esc(process.dump_dir) if process.dump_dir else ''})")
    for note in plan.notes:
        write(f"note:     {esc(note)}")


def _print_outcome(record, table: str, quiet: bool, reporter) -> None:
    from xlatools.run.group_record import failing_log

    log = failing_log(record)
    if (quiet or record.processes) and record.status != "ok":
        reporter.result(f"last lines of {record.bundle}/{log}:")
        reporter.result(_tail(Path(record.bundle) / log, 20))
    for process in record.processes or []:
        first = "  (failed first)" if process.first_failure else ""
        reporter.result(f"process {process.id}: {process.status} ({process.outcome}, {process.duration_s} s){first}")
    for note in record.notes:
        if note.startswith(("vmodule pattern", "the program died in")):  # the ones that explain an outcome
            reporter.result(f"note: {note}")
    dump = record.dump
    if dump and dump.modules:
        reporter.info(f"\nXLA dump: {len(dump.modules)} modules, {dump.files} files, {dump.bytes} bytes")
        reporter.info(table)
    elif dump:
        reporter.info("\nXLA dump: no modules were dumped (did the program compile anything?)")
    program = "" if record.status == "ok" else f"; program {record.program_outcome}"
    reporter.result(f"{record.status} (exit {record.exit_code}{program}, {record.duration_s} s)  bundle: {record.bundle}")
    if dump and dump.modules:
        reporter.info(f"read it with: xlatools inspect {record.bundle} [--module ID|NAME]")


def _tail(path, lines: int) -> str:
    """The last `lines` lines of a log, read from its end (logs can be gigabytes)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
