"""What `xlatools debug` does between its options and the debug capability: the run's own
preparation (presets, profile, target probe, flag checks) turned into the program gdb starts,
the target's pass libraries, and the printing of plans and outcomes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import typer

from xlatools.debug.api import DebugOutcome, DebugRequest
from xlatools.debug.breaks import Breakpoint, PassCatalog


@dataclass(frozen=True)
class Choices:
    program: str | None
    args: list[str]
    module: str | None
    break_passes: list[str]
    break_symbols: list[str]
    max_stops: int
    interactive: bool
    dump_module: bool
    libraries: list[str]
    profile: str | None
    presets: list[str]
    xla_flags: list[str]
    env: list[str]
    python: str | None
    platform: str | None
    out: Path
    name: str | None
    timeout: float | None
    module_re: str | None = None


@dataclass
class Prepared:
    run: object  # run.execute.Prepared: the run's plan and target
    request: DebugRequest
    caller_env: dict[str, str]


def target_dirs(target) -> list[Path]:
    """The package folders whose shared objects carry the target's XLA (jaxlib and its plugins,
    or tensorflow / torch_xla)."""
    origin = target.jaxlib_origin if target.frontend == "jax" else target.frontend_origin
    if not origin:
        return []
    package = Path(origin).parent
    dirs = [package]
    if target.frontend == "jax":
        dirs += [p for p in package.parent.glob("jax_plugins")] + list(package.parent.glob("jax_cuda*_p*"))
    return dirs


def catalog(python: str | None, libraries: list[str], target=None) -> PassCatalog:
    from xlatools.debug.breaks import catalog_for, pass_libraries
    from xlatools.fsutil import cache_root
    from xlatools.run.target import probe, resolve_python

    cache = cache_root() / "debug"
    paths = [Path(p).resolve() for p in libraries]
    if not paths:
        target = target or probe(resolve_python(python), "auto")
        paths = pass_libraries(target_dirs(target), cache)
    return catalog_for(paths, cache)


def prepare(choices: Choices, cwd: Path, caller_env: dict[str, str], argv: list[str]) -> Prepared:
    from xlatools.debug.breaks import dump_pass_regex, plan_breakpoints
    from xlatools.debug.gdb import gdb_version, require_gdb
    from xlatools.debug.session import SessionOptions
    from xlatools.run.execute import prepare as prepare_run
    from xlatools.run.execute import profile_run
    from xlatools.run.plan import RunRequest
    from xlatools.run.program import parse_program, refuse_program_and_module

    gdb = require_gdb()
    if choices.module_re and not (choices.break_passes and choices.dump_module):
        from xlatools.errors import UsageError

        raise UsageError("--hlo-module needs --break-pass (and the module dumps --no-module turns off)")
    _check_regex(choices.module_re)
    refuse_program_and_module(argv[1:], choices.program, choices.module)
    dump_flags = []
    if choices.break_passes and choices.dump_module:
        dump_flags = [f"--xla_dump_hlo_pass_re={dump_pass_regex(choices.break_passes)}", "--xla_dump_hlo_as_text"]
    program = parse_program(choices.program, choices.module, choices.args, cwd)
    request = RunRequest(program=program, python=choices.python, presets=choices.presets,
                         xla_flags=dump_flags + choices.xla_flags, env=choices.env, platform=choices.platform,
                         timeout=choices.timeout, name=choices.name, quiet=True)
    profile_info, define_presets = profile_run(choices.profile)
    run = prepare_run(request, profile_info, define_presets, caller_env, cwd)
    breakpoints: list[Breakpoint] = []
    libraries: list[str] = []
    if choices.break_passes:
        found = catalog(None, choices.libraries, run.target)
        libraries = [m.library for m in found.maps]
        breakpoints = plan_breakpoints(found, choices.break_passes, choices.break_symbols)
    else:
        breakpoints = plan_breakpoints(PassCatalog(), [], choices.break_symbols)
    options = SessionOptions(breakpoints, gdb, choices.max_stops, choices.interactive, choices.module_re)
    request = DebugRequest(choices.name or f"debug-{run.plan.name}", choices.out, options, argv, _target_json(run.target), libraries,
                           gdb_version(gdb))
    return Prepared(run, request, caller_env)


def _check_regex(pattern: str | None) -> None:
    import re

    from xlatools.errors import UsageError

    try:
        re.compile(pattern or "")
    except re.error as exc:
        raise UsageError(f"--hlo-module {pattern}: not a regular expression ({exc})") from None


def _target_json(target) -> dict:
    return {"python": target.python, "frontend": target.frontend, "version": target.frontend_version,
            "jax": target.jax, "jaxlib": target.jaxlib, "backend": target.backend}


def _program(prepared: Prepared, bundle: Path, make_folders: bool = True):
    """The program gdb starts: the run's plan bound to the bundle (the dump folder made)."""
    from xlatools.debug.session import ProgramSpec

    plan = prepared.run.plan.bind(bundle)
    if plan.dump_dir and make_folders:
        Path(plan.dump_dir).mkdir(parents=True, exist_ok=True)
    return ProgramSpec(plan.argv, plan.child_env(prepared.caller_env), plan.cwd, plan.dump_dir, plan.timeout)


def execute(prepared: Prepared) -> DebugOutcome:
    from xlatools.debug.api import run_debug

    return run_debug(prepared.request, lambda bundle: _program(prepared, bundle))


def print_plan(prepared: Prepared, as_json: bool) -> None:
    from xlatools.bundle import redact
    from xlatools.debug.session import plan_session

    placeholder = Path("{bundle}")
    session = plan_session(_program(prepared, placeholder, make_folders=False), prepared.request.options, placeholder)
    data = {"gdb_argv": session.gdb_argv, "breakpoints": [b.to_json() for b in prepared.request.options.breakpoints],
            "program_argv": session.script_plan["argv"], "libraries": prepared.request.libraries,
            "run_plan": redact(prepared.run.plan.to_json())}
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    typer.echo(f"program:  {' '.join(data['program_argv'])}")
    typer.echo(f"gdb:      {' '.join(session.gdb_argv)}")
    for item in prepared.request.options.breakpoints:
        only = f"  (only for {', '.join(item.classes)})" if item.classes else ""
        typer.echo(f"break:    {item.label}: {item.location}{only}")
    typer.echo(f"XLA_FLAGS: {' '.join(prepared.run.plan.xla_flags) or '-'}")
    typer.echo("bundle:   <out>/<UTC time>-<name>-<id>/ (stops/N/, gdb.log, stdout.log, stderr.log)")


def print_outcome(outcome: DebugOutcome, as_json: bool) -> None:
    from xlatools.debug.api import summary_lines

    if as_json:
        keep = ("status", "exit_code", "program_outcome", "program_exit_code", "signal", "stops", "crash", "error",
                "breakpoints", "libraries", "duration_s")
        typer.echo(json.dumps({"bundle": str(outcome.bundle), **{k: outcome.manifest.get(k) for k in keep}}, indent=2))
        return
    for line in summary_lines(outcome.manifest, outcome.result):
        typer.echo(line, err=True)
    typer.echo(f"bundle: {outcome.bundle}", err=True)


def setup(source: Path, profile: str, workspace: Path | None, python: str | None, program: str | None,
          output_base: Path | None, as_json: bool, dry_run: bool) -> None:
    from xlatools.debug.gdb import find_gdb
    from xlatools.debug.setup import SetupRequest, plan_setup, write_setup
    from xlatools.run.target import resolve_python

    request = SetupRequest(tree=source.expanduser().resolve(), profile=profile,
                           workspace=(workspace or source).expanduser().resolve(), python=resolve_python(python),
                           program=program, output_base=output_base.expanduser().resolve() if output_base else None,
                           gdb=find_gdb() or "gdb")
    plan = plan_setup(request, os.environ)
    written = [] if dry_run else write_setup(plan)
    if as_json:
        typer.echo(json.dumps({**plan.to_json(), "written": written, "dry_run": dry_run}, indent=2))
        return
    for warning in plan.warnings:
        typer.echo(f"warning: {warning}", err=True)
    for line in plan.describe():
        typer.echo(line)
    for path in written:
        typer.echo(f"wrote {path}", err=True)

