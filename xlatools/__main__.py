"""The `xlatools` program (console script and `python -m xlatools`): its first lines hold Ctrl-C and SIGTERM.

From here until the program ends, an interrupt is exit 130, at any moment: while the command line's modules
load (nothing is started yet: out at once, under `--json` with the error document on stdout), while the command
runs (cli.main's handlers raise KeyboardInterrupt, so every clean-up runs), and while its result is written
(out at once). Only the interpreter's own start-up, before this module runs, keeps Python's default.
"""

import os
import signal
import sys

_INTERRUPTED_JSON = (
    '{"ok": false, "error": {"type": "Interrupted", "exit_code": 130, "message": "interrupted", '
    '"hint": null, "problems": [], "details": []}}\n'
)
_started = [False]  # the command began: what it wrote to stdout stays the only document there


def _out_now(signum, frame) -> None:
    """Interrupted where nothing is left to clean up: before the command starts, or once it has ended."""
    try:
        os.write(2, b"\ninterrupted\n")
        args = sys.argv[1:]
        if not _started[0] and "--json" in (args[: args.index("--")] if "--" in args else args):
            os.write(1, _INTERRUPTED_JSON.encode())
    except OSError:
        pass
    os._exit(130)


def entry() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # an ignored SIGINT (a background job) stays so
            signal.signal(sig, _out_now)
    from xlatools import cli

    _started[0] = True
    cli.entry()


if __name__ == "__main__":
    entry()
