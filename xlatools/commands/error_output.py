"""How an error leaves the command line (`cli.main` is the only caller): the message, problems and hint on
stderr, the same error as JSON on stdout under `--json`, and for a bug of ours the crash log and exit 70."""

from __future__ import annotations

import sys

import typer

from xlatools.errors import EXIT_INTERNAL, XlaToolsError


def wants_json(argv: list[str]) -> bool:
    """`--json` among the options (not among a program's arguments after `--`)."""
    return "--json" in (argv[: argv.index("--")] if "--" in argv else argv)


def error_json(kind: str, exit_code: int, message: str, exc: XlaToolsError | None = None) -> str:
    """An error as `--json` prints it on stdout: {"ok": false, "error": {type, exit_code, message,
    hint, problems (each as one line of text), details (each problem's message, file, line, key, hint)}}."""
    import json

    from xlatools.records.base import to_json

    problems = exc.problems if exc is not None else []
    return json.dumps(
        {
            "ok": False,
            "error": {
                "type": kind,
                "exit_code": exit_code,
                "message": message,
                "hint": exc.hint if exc is not None else None,
                "problems": [problem.render() for problem in problems],
                "details": to_json(problems),
            },
        },
        indent=2,
    )


def report(exc: XlaToolsError) -> None:
    """The error on stderr: its message, each problem on a line, the hint."""
    from xlatools import console

    console.error(exc.message)
    for problem in exc.problems:
        console.err().print(f"  - {console.escape(problem.render())}")
    if exc.hint:
        console.err().print(f"  hint: {console.escape(exc.hint)}")


def fail(args: list[str], kind: str, exit_code: int, message: str, exc: XlaToolsError | None = None) -> int:
    """The JSON twin of an error message under `--json` (the message itself is already on stderr); `exit_code`."""
    if wants_json(args) and not (exc is not None and exc.reported_json):
        try:
            typer.echo(error_json(kind, exit_code, message, exc))
        except OSError:
            pass  # stdout gone: the message on stderr and the exit code still say it
    return exit_code


MESSAGE_HEAD = 2000  # characters of an internal error's message shown on stderr (the crash log keeps it whole)


def crashed(args: list[str], exc: Exception, debug: bool) -> int:
    """An exception no error class names: a bug in xlatools. Exit EXIT_INTERNAL, a crash log
    (versions, command, traceback) whose path is printed, the JSON twin, the traceback under --debug."""
    from xlatools.crashlog import record_crash

    crash = record_crash(exc, args)
    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    where = (
        f"the crash log is {crash.log}" if crash.log else "no crash log could be written; here it is:\n" + crash.text
    )
    said = crash.message
    if len(said) > MESSAGE_HEAD and crash.log:  # the whole message is in the crash log
        said = f"{said[:MESSAGE_HEAD].rstrip()} ... ({len(said):,} characters in all: see the crash log)"
    message = f"internal error (a bug in xlatools, not in your program): {crash.kind}: {said}"
    try:
        sys.stderr.write(
            f"error: {message}\n  {where}\n  please report it to the xlatools maintainers with that log"
            f"{'' if debug else ' (--debug shows the traceback here)'}\n"
        )
    except OSError:
        pass
    error = XlaToolsError(message, hint=f"crash log: {crash.log}" if crash.log else None)
    fail(args, "InternalError", EXIT_INTERNAL, message, error)
    return EXIT_INTERNAL
