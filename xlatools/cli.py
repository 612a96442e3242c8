"""The `xlatools` command line.

Thin on purpose: each command group lives in `xlatools.commands.*`, whose modules import only
typer at start-up and everything heavy inside the command. A command line builds only the
command it invokes; `xlatools --help` builds none (it lists the names and one-line helps of the
COMMANDS table). `main()` is the only place that reports errors: every error reaches it as an
XlaToolsError (or a usage error of the command line) and leaves as a message on stderr and an
exit code, plus, when the command line asks for `--json`, the same error as JSON on stdout
(commands/error_output.py writes both).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from typing import Optional

import typer
from typer.core import TyperGroup

from xlatools import __version__
from xlatools.commands.error_output import crashed, fail, report
from xlatools.commands.registry import COMMANDS, Entry  # noqa: F401  (tests read Entry here)
from xlatools.errors import EXIT_INTERRUPTED, EXIT_MISSING, EXIT_OK, XlaToolsError


class _State:
    debug = os.environ.get("XLATOOLS_DEBUG", "") not in ("", "0")
    interrupted: str | None = None  # the signal that stopped the command


def _interrupt(signum, frame) -> None:
    _State.interrupted = signal.Signals(signum).name
    raise KeyboardInterrupt


@contextlib.contextmanager
def _interrupts():
    """Ctrl-C and SIGTERM (a cancelled CI job) raise KeyboardInterrupt, so every command's clean-up runs, and
    are noted (typer makes an interrupt a silent exit 130). An ignored SIGINT (a background job) stays so."""
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


def _add(app: typer.Typer, name: str) -> None:
    import importlib

    entry = COMMANDS[name]
    target = getattr(importlib.import_module(f"xlatools.commands.{entry.module}"), entry.attribute)
    if entry.kind == "group":
        app.add_typer(target, name=name)
    else:
        app.command(name)(target)


class _LazyRoot(TyperGroup):
    """The root group when a command line names no command of ours (`--help`, no arguments, a
    typo): it lists the commands from the COMMANDS table and builds one only when asked for it."""

    def list_commands(self, ctx) -> list[str]:
        # typer lists single commands before groups of commands; so does this
        return sorted(COMMANDS, key=lambda name: COMMANDS[name].kind == "group")

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            single = _new_app()
            _add(single, cmd_name)
            self.commands[cmd_name] = typer.main.get_group(single).commands[cmd_name]
        return self.commands.get(cmd_name)

    def format_commands(self, ctx, formatter) -> None:
        from typer._click.utils import make_default_short_help

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        with formatter.section("Commands"):
            formatter.write_dl([(name, make_default_short_help(COMMANDS[name].summary, limit)) for name in names])

    def resolve_command(self, ctx, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except typer_click_exceptions().UsageError as exc:
            import difflib

            close = difflib.get_close_matches(args[0], list(COMMANDS)) if args else []
            if close and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(repr(c) for c in close)}?"
            raise


def _new_app(lazy: bool = False) -> typer.Typer:
    return typer.Typer(
        name="xlatools",
        help="Build-and-debug orchestration for XLA-based projects (JAX/jaxlib first).",
        no_args_is_help=True,
        add_completion=False,
        # Plain click help: typer's rich help formatting costs ~70 ms of imports per start.
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
        **({"cls": _LazyRoot} if lazy else {}),
    )


def build_app(only: str | None = None, lazy: bool = False) -> typer.Typer:
    """The CLI with every command, with just `only` (the one a command line invokes), or, `lazy`,
    with none built until one is asked for (`xlatools --help` lists them from COMMANDS)."""
    from xlatools.commands import helptext

    helptext.install()  # help lines that can be copied: no break inside `--xla-flag=...`
    app = _new_app(lazy)
    app.callback()(_root)
    if not lazy:
        for name in COMMANDS:
            if only is None or name == only:
                _add(app, name)
    return app


def invoked_command(argv: list[str]) -> str | None:
    """The command a command line names (after the root options), when it is one of ours."""
    for word in argv:
        if word in ("--debug",):
            continue
        return word if word in COMMANDS else None
    return None


def typer_click_exceptions():
    try:  # typer >= 0.2x ships its own copy of click
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer with the click package
        from click import exceptions
    return exceptions


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
    """stdout written out now: a full disk becomes our message (exit 3), not Python's exit 120 at shutdown."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        devnull = os.open(os.devnull, os.O_WRONLY)  # what is still buffered goes there: no second error at exit
        os.dup2(devnull, 1)
        os.close(devnull)
        if isinstance(exc, BrokenPipeError):
            return None
        sys.stderr.write(f"error: cannot write the output: {exc.strerror}\n")
        return EXIT_MISSING
    return None


def main(argv: list[str] | None = None) -> int:
    from xlatools.redact import RedactingStream

    _standard_streams()
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)  # no credential is printed
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(args)
    except Exception as exc:  # a bug of ours: never exit 1 (a verdict), never a bare traceback
        return crashed(args, exc, _State.debug)
    finally:
        _flush_stdout()
        sys.stdout, sys.stderr = streams


# A path that cannot be read or written as asked (read-only, a file in the way, no permission): bad input
# wherever a reader or writer did not say so itself, never a traceback.
_PATH_ERRORS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.ELOOP)


def _main(args: list[str]) -> int:
    _State.interrupted = None
    code = _command(args)
    if _State.interrupted and code != EXIT_INTERRUPTED:
        # Python drops what a handler raises inside a finalizer: the command went on, but it was interrupted
        sys.stderr.write(f"\ninterrupted ({_State.interrupted})\n")
        return EXIT_INTERRUPTED  # no JSON error: the command may have printed its own document
    return code


def _command(args: list[str]) -> int:
    from xlatools.commands.options import Invocation

    click_exc = typer_click_exceptions()
    name = invoked_command(args)
    try:
        app = build_app(name) if name else build_app(lazy=True)
        # Commands read their command line from the click context (options.invocation), never sys.argv.
        with _interrupts():
            result = app(args=args, prog_name="xlatools", standalone_mode=False, obj=Invocation(argv=list(args)))
    except XlaToolsError as exc:
        if _State.debug:
            import traceback

            traceback.print_exc()
        report(exc)
        return fail(args, type(exc).__name__, exc.exit_code, exc.message, exc)
    except click_exc.ClickException as exc:
        exc.show()
        return fail(args, "UsageError", exc.exit_code, exc.format_message())
    except (typer.Abort, KeyboardInterrupt):  # typer 0.29 keeps Abort/Exit outside its click copy
        sys.stderr.write("\ninterrupted\n")
        return fail(args, "Interrupted", EXIT_INTERRUPTED, "interrupted")
    except typer.Exit as exc:
        return exc.exit_code
    except BrokenPipeError:
        # `xlatools ... | head`: the reader left; not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:  # a full disk anywhere (the output included) is the environment's, said plainly
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, *_PATH_ERRORS):
            raise
        from xlatools.errors import EnvironmentMissing, UsageError

        where = f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
        error = (
            EnvironmentMissing(where, hint="free some space")
            if exc.errno in (errno.ENOSPC, errno.EDQUOT)
            else UsageError(
                f"cannot use a path: {where}",
                hint="check the path (a read-only file system, a file where "
                "a folder goes, permissions) or pick another --out",
            )
        )
        report(error)
        _flush_stdout()
        return fail(args, type(error).__name__, error.exit_code, error.message, error)
    failed = _flush_stdout()
    if failed is not None:
        return failed
    if result == EXIT_INTERRUPTED and _State.interrupted:
        sys.stderr.write(
            f"\ninterrupted ({_State.interrupted}): stopped; temporary files and child processes removed\n"
        )
        return fail(args, "Interrupted", EXIT_INTERRUPTED, "interrupted")
    return result if isinstance(result, int) else EXIT_OK


def entry() -> None:
    """The `xlatools` program (started by xlatools/__main__.py, which holds interrupts first): main(), then out without
    the interpreter's teardown, which frees every loaded module one by one (~10 ms per start,
    measured). By then everything of ours is written and closed, our threads are joined and
    nothing of ours waits for atexit; only the standard streams need a flush."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader left (`xlatools ... | head`), or the stream is closed
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
