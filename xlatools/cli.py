"""The `xlatools` command line.

Thin on purpose: each command group lives in `xlatools.commands.*`, whose
modules import only typer at start-up and everything heavy inside the command.
`main()` is the only place that turns errors into messages and exit codes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from typing import Optional

import typer

from xlatools import __version__
from xlatools.errors import XlaToolsError

# Every command: name -> (module in xlatools.commands, attribute, a command or a group of commands).
# Command modules are imported only when needed: typer reads the signature of every command it
# is given, so a run builds only the command it invokes (about 20 ms less per start).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "profiles": ("profiles_cmd", "app", "group"),
    "pin": ("pin_cmd", "app", "group"),
    "bazelrc": ("bazelrc_cmd", "bazelrc", "command"),
    "run": ("run_cmd", "run", "command"),
    "presets": ("presets_cmd", "app", "group"),
    "inspect": ("inspect_cmd", "inspect", "command"),
    "lower": ("lower_cmd", "lower", "command"),
    "build": ("build_cmd", "build", "command"),
    "clean": ("clean_cmd", "clean", "command"),
    "doctor": ("doctor_cmd", "doctor", "command"),
    "explain": ("doctor_cmd", "explain", "command"),
    "diff": ("compare_cmd", "diff", "command"),
    "report": ("compare_cmd", "report", "command"),
    "replay": ("replay_cmd", "replay", "command"),
    "repro": ("replay_cmd", "app", "group"),
    "bisect": ("bisect_cmd", "app", "group"),
    "cache": ("cache_cmd", "app", "group"),
}


class _State:
    debug = os.environ.get("XLATOOLS_DEBUG", "") not in ("", "0")
    interrupted: str | None = None  # the signal that stopped the command


def _interrupt(signum, frame) -> None:
    _State.interrupted = signal.Signals(signum).name
    raise KeyboardInterrupt


@contextlib.contextmanager
def _interrupts():
    """Ctrl-C and SIGTERM (a cancelled CI job) raise KeyboardInterrupt, so every command's clean-up runs
    (temporary folders, child process trees), and are noted: typer turns an interrupt into a silent
    exit 130, and main() says what happened. An ignored SIGINT (a background job) stays ignored."""
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, _interrupt)
        except ValueError:  # not the main thread (tests calling main())
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"xlatools {__version__}")
        raise typer.Exit()


def _root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show Python tracebacks for errors (or set XLATOOLS_DEBUG=1)."),
) -> None:
    if debug:
        _State.debug = True


def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with every command, or with just `only` (the one a command line invokes)."""
    import importlib

    app = typer.Typer(
        name="xlatools",
        help="Build-and-debug orchestration for XLA-based projects (JAX/jaxlib first).",
        no_args_is_help=True,
        add_completion=False,
        # Plain click help: typer's rich help formatting costs ~70 ms of imports per start.
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    for name, (module, attribute, kind) in COMMANDS.items():
        if only is None or name == only:
            target = getattr(importlib.import_module(f"xlatools.commands.{module}"), attribute)
            if kind == "group":
                app.add_typer(target, name=name)
            else:
                app.command(name)(target)
    return app


def invoked_command(argv: list[str]) -> str | None:
    """The command a command line names (after the root options), when it is one of ours."""
    for word in argv:
        if word in ("--debug",):
            continue
        return word if word in COMMANDS else None
    return None


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


def _standard_streams() -> None:
    """A closed stdin, stdout or stderr (`xlatools run ... >&-`) is reopened on /dev/null first: else the
    next file opened takes its number, and output meant for the terminal lands in that file."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stdout is None:
        sys.stdout = open(1, "w", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", closefd=False)


def _flush_stdout() -> int | None:
    """stdout written out before we exit, so a full disk or pipe error becomes our message (exit 3),
    not Python's 'Exception ignored' at shutdown (exit 120)."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        devnull = os.open(os.devnull, os.O_WRONLY)  # what is still buffered goes there: no second error at exit
        os.dup2(devnull, 1)
        os.close(devnull)
        if isinstance(exc, BrokenPipeError):
            return None
        sys.stderr.write(f"error: cannot write the output: {exc.strerror}\n")
        return 3
    return None


def main(argv: list[str] | None = None) -> int:
    from xlatools.redact import RedactingStream

    _standard_streams()
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)  # no credential is printed
    try:
        return _main(argv)
    finally:
        _flush_stdout()
        sys.stdout, sys.stderr = streams


def _main(argv: list[str] | None) -> int:
    click_exc = _click_exceptions()
    _State.interrupted = None
    try:
        args = sys.argv[1:] if argv is None else argv
        with _interrupts():
            result = build_app(invoked_command(args))(args=args, prog_name="xlatools", standalone_mode=False)
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
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        from xlatools.errors import EnvironmentMissing

        report(EnvironmentMissing(f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else ""),
                                  hint="free some space"))
        _flush_stdout()
        return EnvironmentMissing.exit_code
    failed = _flush_stdout()
    if failed is not None:
        return failed
    if result == 130 and _State.interrupted:
        sys.stderr.write(f"\ninterrupted ({_State.interrupted}): stopped; temporary files and child processes removed\n")
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
