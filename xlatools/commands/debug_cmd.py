"""`xlatools debug`: stop a program in gdb where an HLO pass starts; list the passes the target's
symbols know; write debugger configs for a debug-built tree.

`xlatools debug PROGRAM ...` is `xlatools debug run PROGRAM ...` (run is the group's default)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup


class _RunByDefault(TyperGroup):
    """A first word that is not a subcommand is the program of `debug run`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_RunByDefault, no_args_is_help=True,
                  help="Native debugging: stop in an HLO pass under gdb, list pass entry points, debugger configs.")


@app.command("run")
def run(
    program: Optional[str] = typer.Argument(None, help="A .py file or smoke:NAME."),
    args: Optional[List[str]] = typer.Argument(None, help="Arguments for the program, after --."),
    module: Optional[str] = typer.Option(None, "-m", help="Run a module (python -m MODULE) instead of a file."),
    break_pass: List[str] = typer.Option([], "--break-pass", help="Stop where this HLO pass starts, by its name in dumps "
                                         "and --xla_disable_hlo_passes (repeatable; `xlatools debug passes` lists them)."),
    break_symbol: List[str] = typer.Option([], "--break", help="Stop at this function or gdb location (repeatable)."),
    max_stops: int = typer.Option(1, "--max-stops", help="Record this many stops, then let the program run to its end."),
    interactive: bool = typer.Option(False, "--interactive", help="At the first stop, hand the terminal to gdb."),
    no_module: bool = typer.Option(False, "--no-module", help="Do not dump the module each named pass receives."),
    hlo_module: Optional[str] = typer.Option(None, "--hlo-module", help="Stop only while an HLO module whose name "
                                             "matches this regex compiles (e.g. jit_f; skips jax's helper modules)."),
    library: List[str] = typer.Option([], "--library", help="Also read passes from this shared object (repeatable)."),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="Profile whose run: section supplies presets, env and flags."),
    preset: List[str] = typer.Option([], "--preset", help="A dump, log, jax or frontend preset (repeatable)."),
    xla_flag: List[str] = typer.Option([], "--xla-flag", help="An XLA flag (repeatable)."),
    env: List[str] = typer.Option([], "--env", help="Set an environment variable for the program, K=V (repeatable)."),
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter that runs the program (default: this one)."),
    platform: Optional[str] = typer.Option(None, "--platform", help="auto, cpu or gpu (default: the profile's, else auto)."),
    out: Path = typer.Option(Path("artifacts"), "--out", help="Bundle root directory."),
    name: Optional[str] = typer.Option(None, "--name", help="Bundle name (default: debug-<program>)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Stop the session after this many seconds (exit 124)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable result on stdout."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (breakpoints, gdb command) and run nothing."),
) -> None:
    """Run a program under gdb with the run's presets and record where the named passes start: the
    native backtrace, the Python stack and the HLO module the pass receives.

    Exit: 0 stopped at least once, 1 no stop or the program crashed, 2 bad input, 3 no gdb or no
    pass symbols, 124 timeout, 130 interrupted."""
    import os
    import sys

    from xlatools.commands import debug_run
    from xlatools.errors import UsageError
    from xlatools.run.plan import PLATFORMS

    if not break_pass and not break_symbol:
        raise UsageError("nothing to stop at", hint="give --break-pass NAME (see `xlatools debug passes`) or --break SYMBOL")
    if max_stops < 1:
        raise UsageError(f"--max-stops {max_stops}: must be 1 or more")
    if platform is not None and platform not in PLATFORMS:
        raise UsageError(f"--platform {platform}: expected auto, cpu or gpu")
    choices = debug_run.Choices(program, list(args or []), module, list(break_pass), list(break_symbol), max_stops,
                                interactive, not no_module, list(library), profile, list(preset), list(xla_flag),
                                list(env), python, platform, out, name, timeout, hlo_module)
    prepared = debug_run.prepare(choices, Path.cwd(), dict(os.environ), sys.argv[1:])
    if dry_run:
        debug_run.print_plan(prepared, as_json)
        return
    outcome = debug_run.execute(prepared)
    debug_run.print_outcome(outcome, as_json)
    raise typer.Exit(outcome.exit_code)


@app.command("passes")
def passes(
    python: Optional[str] = typer.Option(None, "--python", help="Target interpreter (default: this one)."),
    library: List[str] = typer.Option([], "--library", help="Read this shared object instead of the target's (repeatable)."),
    grep: Optional[str] = typer.Option(None, "--grep", help="Only passes or classes containing this text."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable list on stdout."),
) -> None:
    """The HLO passes the target's own symbol table names: pass name, C++ class and the function
    a breakpoint stops in (a base's, when the class inherits it)."""
    import json

    from xlatools.commands import debug_run
    from xlatools.debug.breaks import passes_table

    catalog = debug_run.catalog(python, list(library))
    rows = [r for r in passes_table(catalog) if not grep or grep in r["pass"] or grep in r["cls"]]
    if as_json:
        typer.echo(json.dumps({"libraries": [m.library for m in catalog.maps], "passes": rows}, indent=2))
        return
    from xlatools.console import columns

    table = [("pass", "class", "breaks in", "library")]
    table += [(r["pass"], r["cls"], (r["entry_display"] or "-") + (" (inherited)" if r["entry_from"] != r["cls"] else ""),
               r["library"]) for r in rows]
    typer.echo(columns(table))
    for pass_map in catalog.maps:
        unnamed = sum(1 for c in pass_map.classes if not c.name)
        typer.echo(f"{pass_map.library}: {len(pass_map.classes)} pass classes, {unnamed} without a constant name"
                   + (f"; {pass_map.note}" if pass_map.note else ""), err=True)


@app.command("setup")
def setup(
    source: Path = typer.Option(..., "--source", help="The JAX tree the debug jaxlib was built from."),
    profile: str = typer.Option("dbg-cpu", "--profile", "-p", help="The profile it was built with (its -g is checked)."),
    workspace: Optional[Path] = typer.Option(None, "--workspace", help="Where .vscode/ goes (default: the JAX tree)."),
    python: Optional[str] = typer.Option(None, "--python", help="The interpreter with the debug jaxlib (default: this one)."),
    program: Optional[str] = typer.Option(None, "--program", help="The Python launch's program (default: the open file)."),
    output_base: Optional[Path] = typer.Option(None, "--output-base", help="bazel's output base (default: `bazel info output_base` in the tree)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable result on stdout."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be written and write nothing."),
) -> None:
    """Write .vscode/launch.json (a Python launch and a C++ "(gdb) Attach", with source maps from
    bazel's /proc/self/cwd and external/xla) and a gdb init file with the same substitute-path
    lines. Existing files are merged: other configurations and lines are kept."""
    from xlatools.commands import debug_run

    debug_run.setup(source, profile, workspace, python, program, output_base, as_json, dry_run)
