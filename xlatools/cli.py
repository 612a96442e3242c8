"""The `xlatools` command line.

Thin on purpose: each command group lives in `xlatools.commands.*`, whose
modules import only typer at start-up and everything heavy inside the command.
`main()` is the only place that turns errors into messages and exit codes.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from xlatools import __version__
from xlatools.commands import (
    bazelrc_cmd,
    bisect_cmd,
    build_cmd,
    cache_cmd,
    clean_cmd,
    doctor_cmd,
    compare_cmd,
    inspect_cmd,
    lower_cmd,
    pin_cmd,
    presets_cmd,
    profiles_cmd,
    replay_cmd,
    run_cmd,
)
from xlatools.errors import XlaToolsError

app = typer.Typer(
    name="xlatools",
    help="Build-and-debug orchestration for XLA-based projects (JAX/jaxlib first).",
    no_args_is_help=True,
    add_completion=False,
    # Plain click help: typer's rich help formatting costs ~70 ms of imports per start.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class _State:
    debug = os.environ.get("XLATOOLS_DEBUG", "") not in ("", "0")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"xlatools {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks for errors (or set XLATOOLS_DEBUG=1)."),
) -> None:
    if debug:
        _State.debug = True


app.add_typer(profiles_cmd.app, name="profiles")
app.add_typer(pin_cmd.app, name="pin")
app.command("bazelrc")(bazelrc_cmd.bazelrc)
app.command("run")(run_cmd.run)
app.add_typer(presets_cmd.app, name="presets")
app.command("inspect")(inspect_cmd.inspect)
app.command("lower")(lower_cmd.lower)
app.command("build")(build_cmd.build)
app.command("clean")(clean_cmd.clean)
app.command("doctor")(doctor_cmd.doctor)
app.command("explain")(doctor_cmd.explain)
app.command("diff")(compare_cmd.diff)
app.command("report")(compare_cmd.report)
app.add_typer(bisect_cmd.app, name="bisect")
app.add_typer(cache_cmd.app, name="cache")
app.command("replay")(replay_cmd.replay)
app.add_typer(replay_cmd.app, name="repro")


def _click_exceptions():
    try:  # typer >= 0.2x ships its own copy of click
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer with the click package
        from click import exceptions
    return exceptions


def report(exc: XlaToolsError) -> None:
    from xlatools import console

    console.error(exc.message)
    for problem in exc.problems:
        console.err().print(f"  - {console.escape(problem.render())}")
    if exc.hint:
        console.err().print(f"  hint: {console.escape(exc.hint)}")


def main(argv: list[str] | None = None) -> int:
    click_exc = _click_exceptions()
    try:
        result = app(args=argv, prog_name="xlatools", standalone_mode=False)
    except XlaToolsError as exc:
        if _State.debug:
            import traceback

            traceback.print_exc()
        report(exc)
        return exc.exit_code
    except click_exc.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):  # typer 0.29 keeps Abort/Exit outside its click copy
        sys.stderr.write("\ninterrupted\n")
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    except BrokenPipeError:
        # `xlatools ... | head`: the reader left; not an error of ours.
        sys.stderr.close()
        return 0
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
