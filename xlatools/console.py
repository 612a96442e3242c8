"""Terminal output. Data goes to stdout, messages and progress to stderr.

rich is imported on first use, not at CLI start-up. Colour follows rich's rules:
off when NO_COLOR is set or the stream is not a terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from functools import lru_cache
from typing import Iterator

from xlatools.redact import redact_text


@lru_cache(maxsize=None)
def _console(stderr: bool):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # Not a terminal (a pipe, a CI log): no 80-column wrapping of tables and paths.
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 240
    # highlight=False: rich's automatic number/path colouring is noise in tool output.
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


def out():
    """Console on stdout, for the data a command produces."""
    return _console(False)


def err():
    """Console on stderr, for messages, warnings and progress."""
    return _console(True)


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(text)


def info(message: str) -> None:
    err().print(message)


def warn(message: str) -> None:
    err().print(f"[yellow]warning:[/yellow] {escape(message)}")


def error(message: str) -> None:
    err().print(f"[bold red]error:[/bold red] {escape(message)}")


def step(message: str) -> None:
    """Announce a step of longer work (echoed before it runs)."""
    err().print(f"[cyan]==>[/cyan] {escape(message)}")


def in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


@contextlib.contextmanager
def group(title: str, announce: bool = True) -> Iterator[None]:
    """A foldable log group in GitHub Actions; elsewhere a step header (unless `announce` is off)."""
    if in_github_actions():
        sys.stdout.flush()
        sys.stderr.write(f"::group::{title}\n")
        sys.stderr.flush()
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.write("::endgroup::\n")
            sys.stderr.flush()
    else:
        if announce:
            step(title)
        yield


def columns(rows: list[tuple[str, ...]]) -> str:
    """Rows as plain left-aligned columns (the first row is the header). No rich: it sits on
    the run path, whose start-up cost matters."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def append_job_summary(markdown: str) -> bool:
    """Append Markdown to the GitHub Actions job summary when GITHUB_STEP_SUMMARY is set.

    Best effort: a summary that cannot be written never fails the command."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(redact_text(markdown if markdown.endswith("\n") else markdown + "\n"))
    except OSError as exc:
        warn(f"could not append to the job summary {path}: {exc.strerror}")
        return False
    return True
