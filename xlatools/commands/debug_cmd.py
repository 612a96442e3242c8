"""`xlatools debug`: stop a program in gdb where an HLO pass starts; list the passes the target's
symbols know; write debugger configs for a debug-built tree.

`xlatools debug PROGRAM ...` is `xlatools debug run PROGRAM ...` (run is the group's default).
The program's own settings are `xlatools run`'s options (commands/program_options.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer
from typer.core import TyperGroup

from xlatools.commands.options import DryRunOption, JsonOption, ProfileOption, PythonOption, QuietOption, invocation
from xlatools.commands.program_options import ProgramOptions, with_program_options


class _RunByDefault(TyperGroup):
    """A first word that is not a subcommand is the program of `debug run`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_RunByDefault,
    no_args_is_help=True,
    help="Native debugging: stop in an HLO pass under gdb, list pass entry points, write debugger configs.",
)

LibraryOption = Annotated[
    List[str],
    typer.Option("--library", help="Read HLO passes from this shared object instead of the target's (repeatable)."),
]


@app.command("run")
@with_program_options
def run(
    *,
    break_pass: List[str] = typer.Option(
        [],
        "--break-pass",
        help="Stop where this HLO pass starts, by its name in dumps "
        "and --xla_disable_hlo_passes (repeatable; `xlatools debug passes` lists them).",
    ),
    break_symbol: List[str] = typer.Option([], "--break", help="Stop at this function or gdb location (repeatable)."),
    max_stops: int = typer.Option(
        1, "--max-stops", min=1, help="Record this many stops, then let the program run to its end."
    ),
    interactive: bool = typer.Option(False, "--interactive", help="At the first stop, hand the terminal to gdb."),
    no_module: bool = typer.Option(False, "--no-module", help="Do not dump the module each named pass receives."),
    hlo_module: Optional[str] = typer.Option(
        None,
        "--hlo-module",
        help="Stop only while an HLO module whose name "
        "matches this regex compiles (e.g. jit_f; skips jax's helper modules).",
    ),
    library: LibraryOption = [],
    program_options: ProgramOptions,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
    quiet: QuietOption = None,
) -> None:
    """Run a program under gdb with the run's presets and record where the named passes start: the
    native backtrace, the Python stack and the HLO module the pass receives.

    The program and its settings: as for `xlatools run`. Exit: 0 stopped at least once, 1 no stop
    or the program crashed, 2 bad input, 3 no gdb or no pass symbols, 124 timeout, 130 interrupted."""
    import os

    from xlatools.commands import debug_run
    from xlatools.console import Reporter

    stops = debug_run.Stops(
        passes=list(break_pass),
        symbols=list(break_symbol),
        max_stops=max_stops,
        interactive=interactive,
        dump_module=not no_module,
        module_re=hlo_module,
        libraries=list(library),
    )
    debug_run.check_stops(stops)
    reporter = Reporter(quiet=bool(quiet))
    prepared = debug_run.prepare(stops, program_options, invocation().argv, dict(os.environ), Path.cwd(), reporter)
    if dry_run:
        debug_run.print_plan(prepared, as_json)
        return
    outcome = debug_run.execute(prepared, reporter)
    debug_run.print_outcome(outcome, as_json, reporter)
    raise typer.Exit(outcome.exit_code)


@app.command("passes")
def passes(
    python: PythonOption = None,
    library: LibraryOption = [],
    grep: Optional[str] = typer.Option(None, "--grep", help="Only passes or classes containing this text (any case)."),
    as_json: JsonOption = False,
) -> None:
    """The HLO passes the target's own symbol table names: pass name, C++ class and the function
    a breakpoint stops in (a base's, when the class inherits it)."""
    import json

    from xlatools.commands import debug_run
    from xlatools.console import Reporter, columns
    from xlatools.debug.breaks import passes_table
    from xlatools.records.base import to_json

    reporter = Reporter()
    catalog = debug_run.catalog(python, list(library), reporter)
    rows = passes_table(catalog, grep)
    if as_json:
        typer.echo(json.dumps({"libraries": [m.library for m in catalog.maps], "passes": to_json(rows)}, indent=2))
        return
    table = [("pass", "class", "breaks in", "library")]
    table += [
        (r.pass_, r.cls, (r.entry_display or "-") + (" (inherited)" if r.entry_from != r.cls else ""), r.library)
        for r in rows
    ]
    typer.echo(columns(table))
    for pass_map in catalog.maps:
        unnamed = sum(1 for c in pass_map.classes if not c.name)
        reporter.info(
            f"{pass_map.library}: {len(pass_map.classes)} pass classes, {unnamed} without a constant name"
            + (f"; {pass_map.note}" if pass_map.note else "")
        )


@app.command("setup")
def setup(
    source: Path = typer.Option(..., "--source", help="The JAX tree the debug jaxlib was built from."),
    profile: ProfileOption = "dbg-cpu",
    workspace: Optional[Path] = typer.Option(None, "--workspace", help="Where .vscode/ goes (default: the JAX tree)."),
    python: PythonOption = None,
    program: Optional[str] = typer.Option(
        None, "--program", help="The Python launch's program (default: the open file)."
    ),
    output_base: Optional[Path] = typer.Option(
        None, "--output-base", help="bazel's output base (default: `bazel info output_base` in the tree)."
    ),
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Write .vscode/launch.json (a Python launch and a C++ "(gdb) Attach", with source maps from
    bazel's /proc/self/cwd and external/xla) and a gdb init file with the same substitute-path
    lines. Existing files are merged: other configurations and lines are kept.

    --profile: the profile the tree was built with (its -g for XLA and jaxlib is checked)."""
    from xlatools.commands import debug_run
    from xlatools.console import Reporter

    debug_run.setup(source, profile or "dbg-cpu", workspace, python, program, output_base, as_json, dry_run, Reporter())
