"""A bug in xlatools: its own exit code (errors.EXIT_INTERNAL, never 1, which means "the program
failed" and, for `repro run`, "reproduced"), a crash log a user can attach to a report, and one
line on stderr naming it. `cli.main` is the only caller.

The log holds the versions (xlatools, Python, platform), the command line and the traceback, all
redacted, and where to report it. It lands in `<cache root>/crashes/` (XLATOOLS_CACHE_DIR or the
user cache dir), else the temp dir; if neither can be written the traceback goes to stderr instead,
so a crash is never silent.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

REPORT_TO = "the xlatools maintainers (the project's issue tracker): attach this file and say what you ran"


@dataclass(frozen=True)
class Crash:
    """What cli.main says about a bug: the exception's type and message, and where its log is."""

    kind: str
    message: str
    log: Path | None
    text: str  # the whole log, for stderr when it could not be written


def crash_text(exc: BaseException, argv: list[str]) -> str:
    """The crash log's text (redacted): versions, command, traceback, where to report."""
    from xlatools import __version__
    from xlatools.redact import redact_argv, redact_text

    frames = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    lines = [
        "xlatools crash report",
        f"time: {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
        f"xlatools: {__version__}",
        f"python: {platform.python_version()} ({sys.executable})",
        f"platform: {platform.platform()}",
        f"command: xlatools {' '.join(redact_argv(list(argv)))}",
        f"cwd: {os.getcwd() if os.path.isdir('.') else '?'}",
        "",
        frames.rstrip(),
        "",
        f"report to: {REPORT_TO}",
        "",
    ]
    return redact_text("\n".join(lines))


def _folders() -> list[Path]:
    from xlatools.fsutil import cache_root

    folders = []
    try:
        folders.append(cache_root() / "crashes")
    except Exception:  # noqa: BLE001 - no cache root (no HOME): the temp dir still takes the log
        pass
    folders.append(Path(tempfile.gettempdir()) / "xlatools-crashes")
    return folders


def record_crash(exc: BaseException, argv: list[str]) -> Crash:
    """Write the crash log (first folder that takes it) and say where; never raises."""
    from xlatools.fsutil import atomic_write_text

    try:
        text = crash_text(exc, argv)
    except Exception:  # noqa: BLE001 - the report of a bug must not fail on a second one
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for folder in _folders():
        path = folder / f"crash-{stamp}-{os.getpid()}.log"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text, durable=False)
        except OSError:
            continue
        return Crash(type(exc).__name__, str(exc), path, text)
    return Crash(type(exc).__name__, str(exc), None, text)
