"""What `xlatools debug` does between its options and the debug capability: the run's own
preparation (presets, profile, target probe, flag checks) turned into the program gdb starts
and its record, the target's pass libraries, and the printing of plans and outcomes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from xlatools.debug.api import DebugOutcome, DebugRequest
from xlatools.debug.breaks import PassCatalog
from xlatools.debug.session import ProgramSpec
from xlatools.errors import REGEX_ERRORS, UsageError
from xlatools.records.debug import DebugManifest

if TYPE_CHECKING:
    from xlatools.commands.program_options import ProgramOptions
    from xlatools.console import Reporter
    from xlatools.run.execute import PreparedRun
    from xlatools.run.target import ProbedInterpreter


@dataclass(frozen=True, kw_only=True)
class Stops:
    """Where the session stops, as the command line asked."""

    passes: list[str]
    symbols: list[str]
    max_stops: int = 1
    interactive: bool = False
    dump_module: bool = True  # dump the module each named pass receives
    module_re: str | None = None
    libraries: list[str] = field(default_factory=list)


@dataclass
class PreparedDebugRun:
    run: PreparedRun  # the run's plan, target and flag checks
    request: DebugRequest
    argv: list[str]
    caller_env: dict[str, str]


def check_stops(stops: Stops) -> None:
    """Refuse what cannot stop anywhere, before anything is probed or written."""
    import re

    if not stops.passes and not stops.symbols:
        raise UsageError(
            "nothing to stop at", hint="give --break-pass NAME (see `xlatools debug passes`) or --break SYMBOL"
        )
    for option, values in (("--break-pass", stops.passes), ("--break", stops.symbols)):
        for value in values:
            # each becomes one line of gdb's script: an empty one, or one with a line break, is another command
            if not value.strip() or any(ord(char) < 32 for char in value):
                raise UsageError(
                    f"{option} {value!r}: expected a pass name or a function (one line, not empty)",
                    hint="e.g. --break-pass algsimp, --break 'xla::HloPassPipeline::Run'",
                )
    if stops.module_re is None:
        return
    if not (stops.passes and stops.dump_module):
        raise UsageError("--hlo-module needs --break-pass (and the module dumps --no-module turns off)")
    try:
        re.compile(stops.module_re)
    except REGEX_ERRORS as exc:
        raise UsageError(f"--hlo-module {stops.module_re}: not a regular expression ({exc})") from None


def dump_flags(stops: Stops) -> list[str]:
    """XLA dumps each module just before the named passes: at a stop, the newest such file is the pass's input."""
    from xlatools.debug.breaks import dump_pass_regex

    if not (stops.passes and stops.dump_module):
        return []
    return [f"--xla_dump_hlo_pass_re={dump_pass_regex(stops.passes)}", "--xla_dump_hlo_as_text"]


def _library(path: str) -> Path:
    """A --library: a regular file (a FIFO would block the ELF reader, a folder or a missing file would end in a traceback)."""
    import os
    import stat

    try:
        is_file = stat.S_ISREG(os.stat(path).st_mode)
    except OSError as exc:
        raise UsageError(f"--library {path}: {exc.strerror}") from None
    if not is_file:
        raise UsageError(f"--library {path}: not a regular file", hint="name a shared object (.so)")
    return Path(path).resolve()


def catalog(
    python: str | None, libraries: list[str], reporter: Reporter, target: ProbedInterpreter | None = None
) -> PassCatalog:
    """The pass maps of `libraries`, else of the target's own shared objects (cached per file)."""
    from xlatools.debug.breaks import catalog_for, package_dirs, pass_libraries
    from xlatools.fsutil import cache_root
    from xlatools.run.target import probe, resolve_python

    cache = cache_root() / "debug"
    paths = [_library(p) for p in libraries]
    if not paths:
        target = target or probe(resolve_python(python), "auto", reporter=reporter)
        origin = target.jaxlib_origin if target.frontend == "jax" else target.frontend_origin
        paths = pass_libraries(package_dirs(target.frontend, origin), cache)
    return catalog_for(paths, cache, reporter)


def prepare(
    stops: Stops, options: ProgramOptions, argv: list[str], caller_env: dict[str, str], cwd: Path, reporter: Reporter
) -> PreparedDebugRun:
    """Everything checked before the bundle exists: gdb, the run's plan and target, the breakpoints."""
    from dataclasses import replace

    from xlatools.debug.api import DebugRequest
    from xlatools.debug.breaks import plan_breakpoints
    from xlatools.debug.gdb import gdb_version, require_gdb
    from xlatools.debug.session import SessionOptions
    from xlatools.run.execute import prepare as prepare_run
    from xlatools.run.execute import profile_run

    gdb = require_gdb()
    request = options.run_request(argv, cwd, quiet=True)  # the program's output goes to the bundle's logs
    request = replace(request, xla_flags=dump_flags(stops) + request.xla_flags)
    profile_info, define_presets = profile_run(options.profile)
    run = prepare_run(request, profile_info, define_presets, caller_env, cwd, reporter)
    found = catalog(None, stops.libraries, reporter, run.target) if stops.passes else PassCatalog()
    breakpoints = plan_breakpoints(found, stops.passes, stops.symbols)
    session = SessionOptions(breakpoints, gdb, stops.max_stops, stops.interactive, stops.module_re)
    debug = DebugRequest(
        name=options.name or f"debug-{run.plan.name}",
        out=options.out,
        options=session,
        libraries=[m.library for m in found.maps],
        gdb_version=gdb_version(gdb),
    )
    return PreparedDebugRun(run, debug, argv, caller_env)


def bind(prepared: PreparedDebugRun, bundle: Path, make_folders: bool = True) -> tuple[ProgramSpec, DebugManifest]:
    """The program gdb starts (the run's plan bound to the bundle, its dump folder made) and its record."""
    from xlatools.run.manifest import run_record

    plan = prepared.run.plan.bind(bundle)
    if plan.dump_dir and make_folders:
        Path(plan.dump_dir).mkdir(parents=True, exist_ok=True)
    program = ProgramSpec(plan.argv, plan.child_env(prepared.caller_env), plan.cwd, plan.dump_dir, plan.timeout)
    return program, run_record(plan, prepared.run.target, prepared.argv, prepared.run.flag_checks, kind=DebugManifest)


def execute(prepared: PreparedDebugRun, reporter: Reporter) -> DebugOutcome:
    from xlatools.debug.api import run_debug

    return run_debug(prepared.request, lambda bundle: bind(prepared, bundle), reporter)


def print_plan(prepared: PreparedDebugRun, as_json: bool) -> None:
    from xlatools.debug.session import plan_session
    from xlatools.records.base import to_json
    from xlatools.redact import redact

    placeholder = Path("{bundle}")
    options = prepared.request.options
    session = plan_session(bind(prepared, placeholder, make_folders=False)[0], options, placeholder)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "gdb_argv": session.gdb_argv,
                    "breakpoints": to_json(options.breakpoints),
                    "program_argv": session.script.argv,
                    "libraries": prepared.request.libraries,
                    "run_plan": redact(prepared.run.plan.to_json()),
                },
                indent=2,
            )
        )
        return
    typer.echo(f"program:  {' '.join(session.script.argv)}")
    typer.echo(f"gdb:      {' '.join(session.gdb_argv)}")
    for item in options.breakpoints:
        only = f"  (only for {', '.join(item.classes)})" if item.classes else ""
        typer.echo(f"break:    {item.label}: {item.location}{only}")
    typer.echo(f"XLA_FLAGS: {' '.join(prepared.run.plan.xla_flags) or '-'}")
    typer.echo("bundle:   <out>/<UTC time>-<name>-<id>/ (stops/N/, gdb.log, stdout.log, stderr.log)")


def print_outcome(outcome: DebugOutcome, as_json: bool, reporter: Reporter) -> None:
    from xlatools.debug.api import summary_lines
    from xlatools.records.base import to_json

    record = outcome.record
    if as_json:
        data = to_json(record)
        keep = (
            "bundle",
            "status",
            "exit_code",
            "program_outcome",
            "returncode",
            "signal",
            "native_backtrace",
            "stops",
            "error",
            "breakpoints",
            "libraries",
            "duration_s",
        )
        typer.echo(json.dumps({k: data.get(k) for k in keep}, indent=2))
        return
    lines = summary_lines(record)
    lines[0] = lines[0].removeprefix("status: ")  # as `run` says it: "timeout (...)", "interrupted (...)"
    for line in lines:
        reporter.result(line)
    reporter.result(f"bundle: {record.bundle}")


def setup(
    source: Path,
    profile: str,
    workspace: Path | None,
    python: str | None,
    program: str | None,
    output_base: Path | None,
    as_json: bool,
    dry_run: bool,
    reporter: Reporter,
) -> None:
    from xlatools.debug.gdb import find_gdb
    from xlatools.debug.setup import SetupRequest, plan_setup, write_setup
    from xlatools.records.base import to_json
    from xlatools.run.target import resolve_python

    request = SetupRequest(
        tree=source.expanduser().resolve(),
        profile=profile,
        workspace=(workspace or source).expanduser().resolve(),
        python=resolve_python(python),
        program=program,
        output_base=output_base.expanduser().resolve() if output_base else None,
        gdb=find_gdb() or "gdb",
    )
    plan = plan_setup(request, os.environ)
    written = [] if dry_run else write_setup(plan)
    if as_json:
        typer.echo(json.dumps({**to_json(plan), "written": written, "dry_run": dry_run}, indent=2))
        return
    for warning in plan.warnings:
        reporter.warn(warning)
    for line in plan.describe():
        typer.echo(line)
    for path in written:
        reporter.result(f"wrote {path}")
