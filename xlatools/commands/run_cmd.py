"""`xlatools run`: run a program with debug presets and collect a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def run(
    program: Optional[str] = typer.Argument(None, help="A .py file or smoke:NAME (smoke:all, the default, runs every smoke program)."),
    args: Optional[List[str]] = typer.Argument(None, help="Arguments for the program, after --."),
    module: Optional[str] = typer.Option(None, "-m", help="Run a module (python -m MODULE) instead of a file."),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="Profile whose run: section supplies presets, env and flags."),
    dump: bool = typer.Option(False, "--dump", help="Turn on the profile's dump preset (default: hlo)."),
    preset: List[str] = typer.Option([], "--preset", help="A dump, log, jax or frontend preset (repeatable); see `xlatools presets list`."),
    xla_flag: List[str] = typer.Option([], "--xla-flag", help="An XLA flag, e.g. --xla-flag=--xla_dump_hlo_pass_re=.* (repeatable)."),
    vmodule: List[str] = typer.Option([], "--vmodule", help="C++ VLOG level per source file, FILE=N (repeatable)."),
    vlog: Optional[int] = typer.Option(None, "--vlog", help="C++ VLOG level everywhere (TF_CPP_MAX_VLOG_LEVEL)."),
    env: List[str] = typer.Option([], "--env", help="Set an environment variable for the program, K=V (repeatable)."),
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter that runs the program (default: this one)."),
    frontend: Optional[str] = typer.Option(None, "--frontend", help="jax, tensorflow or torch-xla (default: the profile's, a frontend preset's, else detected)."),
    out: Path = typer.Option(Path("artifacts"), "--out", help="Bundle root directory."),
    name: Optional[str] = typer.Option(None, "--name", help="Bundle name (default: from the program)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Stop the program after this many seconds (exit 124)."),
    platform: Optional[str] = typer.Option(None, "--platform", help="auto, cpu or gpu (default: the profile's, else auto)."),
    archive: bool = typer.Option(False, "--archive", help="Also write <bundle>.tar.gz."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable summary on stdout (the program's stdout goes to stderr)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (env, flags, argv) and run nothing."),
    quiet: Optional[bool] = typer.Option(None, "--quiet/--no-quiet", help="Program output only into the bundle's logs, "
                                         "with a heartbeat line (default: quiet when VLOG output is asked for)."),
    exit_code: str = typer.Option("xlatools", "--exit-code", help="xlatools: any failure of the program exits 1 "
                                  "(the program's status is in the summary and manifest); program: exit with the "
                                  "program's own status (128+N for signal N)."),
) -> None:
    """Run a program (a smoke program, a script or a module) with XLA dump/log presets into a fresh bundle."""
    import json
    import os
    import sys

    from xlatools.errors import UsageError
    from xlatools.run.execute import execute_plan, prepare, profile_run
    from xlatools.run.plan import PLATFORMS, RunRequest
    from xlatools.run.program import parse_program, refuse_program_and_module

    if platform is not None and platform not in PLATFORMS:
        raise UsageError(f"--platform {platform}: expected auto, cpu or gpu")
    if exit_code not in ("xlatools", "program"):
        raise UsageError(f"--exit-code {exit_code}: expected xlatools or program")
    refuse_program_and_module(sys.argv[1:], program, module)
    cwd = Path.cwd()
    profile_info, define_presets = profile_run(profile)
    request = RunRequest(
        program=parse_program(program, module, list(args or []), cwd),
        python=python,
        dump=dump, presets=list(preset), xla_flags=list(xla_flag), vmodule=list(vmodule), vlog=vlog,
        env=list(env), platform=platform, timeout=timeout, name=name, quiet=quiet, frontend=frontend,
    )
    caller_env = dict(os.environ)
    prepared = prepare(request, profile_info, define_presets, caller_env, cwd)
    if dry_run:
        from xlatools.bundle import redact

        plan = redact(prepared.plan.to_json())  # secrets hidden, as in manifests
        if as_json:
            typer.echo(json.dumps({"plan": plan, "target": prepared.target.to_json(), "flag_checks": prepared.flag_checks}, indent=2))
        else:
            _print_plan(prepared)
        return
    outcome = execute_plan(prepared, out, sys.argv[1:], caller_env, archive=archive, echo_stdout_to_stderr=as_json,
                           exit_code_mode=exit_code)
    manifest = outcome.manifest
    from xlatools.console import append_job_summary

    append_job_summary(f"### xlatools run\n\n- `{(manifest.get('program') or {}).get('label')}`: {manifest['status']} "
                       f"(exit {manifest['exit_code']}, {manifest['duration_s']} s)\n- bundle: `{manifest['bundle']}`\n")
    if as_json:
        keep = ("status", "exit_code", "returncode", "signal", "program_outcome", "bundle", "duration_s", "program",
                "jax", "frontend", "presets", "xla_flags", "dump", "smoke", "notes", "archive")
        typer.echo(json.dumps({k: manifest.get(k) for k in keep}, indent=2))
    else:
        _print_outcome(manifest, outcome.table, prepared.plan.quiet)
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
    from xlatools.bundle import redact_env

    for change in plan.env_changes:
        value = "(removed)" if change.value is None else redact_env({change.name: change.value})[change.name]
        write(f"  {esc(change.name)}={esc(value)}    [dim]# {esc(str(change.source))}[/dim]")
    write(f"bundle:   <out>/<UTC time>-{esc(plan.name)}-<id>/  (dumps: {esc(plan.dump_dir or 'none')})")
    write(f"timeout:  {plan.timeout if plan.timeout else 'none'}")
    write(f"argv:     {esc(shlex.join(plan.argv))}")
    for note in plan.notes:
        write(f"note:     {esc(note)}")


def _print_outcome(manifest: dict, table: str, quiet: bool) -> None:
    from pathlib import Path

    from xlatools.run.execute import say

    if quiet and manifest["status"] != "ok":
        say(f"last lines of {manifest['bundle']}/stderr.log:")
        say(_tail(Path(manifest["bundle"]) / "stderr.log", 20))
    for note in manifest.get("notes", []):
        if note.startswith(("vmodule pattern", "the program died in")):  # the ones that explain an outcome
            say(f"note: {note}")
    dump = manifest.get("dump")
    if dump and dump["modules"]:
        say(f"\nXLA dump: {len(dump['modules'])} modules, {dump['files']} files, {dump['bytes']} bytes")
        say(table)
    elif dump:
        say("\nXLA dump: no modules were dumped (did the program compile anything?)")
    program = "" if manifest["status"] == "ok" else f"; program {manifest['program_outcome']}"
    say(f"{manifest['status']} (exit {manifest['exit_code']}{program}, {manifest['duration_s']} s)  bundle: {manifest['bundle']}")
    if dump and dump["modules"]:
        say(f"read it with: xlatools inspect {manifest['bundle']} [--module ID|NAME]")


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
