"""Terminal output. Data goes to stdout, messages and progress to stderr.

Commands print; capabilities report through the `Reporter` their command hands them and never
write to a stream themselves. The Reporter writes plain lines (rich's import alone costs more
than the rest of a run's start-up); rich is imported on first use by the commands' own output.
Colour: off when NO_COLOR is set or the stream is not a terminal.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from functools import lru_cache
from typing import Callable, Iterator, Sequence, TextIO

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
    COMMAND.info(message)


def warn(message: str) -> None:
    COMMAND.warn(message)


def error(message: str) -> None:
    err().print(f"[bold red]error:[/bold red] {escape(message)}")


def step(message: str) -> None:
    """Announce a step of longer work (echoed before it runs)."""
    COMMAND.step(message)


def in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def group(title: str, announce: bool = True) -> contextlib.AbstractContextManager[None]:
    """A foldable log group in GitHub Actions; elsewhere a step header (unless `announce` is off)."""
    return COMMAND.group(title, announce)


def columns(rows: Sequence[tuple[str, ...]]) -> str:
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


class Reporter:
    """Human progress of long work, on stderr: one per command invocation, handed down to the
    capabilities. `quiet` keeps warnings, heartbeats and the result, and drops the rest; the
    program's own output is echoed only when not quiet (`echo_streams`). --json never changes
    what goes here: stdout is the command's data, stderr the reporter's."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None):
        self.quiet = quiet
        self._stream = stream  # None: sys.stderr at the time of writing (tests swap it)

    @classmethod
    def silent(cls) -> "Reporter":
        return cls(quiet=True, stream=io.StringIO())

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr

    def _write(self, text: str) -> None:
        try:
            sys.stdout.flush()  # keep the order of data and messages in a shared log
        except (OSError, ValueError):
            pass
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass  # stderr closed or gone: progress is not worth failing the work for

    def _colour(self, code: str, text: str) -> str:
        try:
            tty = self.stream.isatty()
        except (OSError, ValueError):
            tty = False
        return f"\033[{code}m{text}\033[0m" if tty and not os.environ.get("NO_COLOR") else text

    def step(self, text: str) -> None:
        """A step of longer work, announced before it runs."""
        if not self.quiet:
            self._write(f"{self._colour('36', '==>')} {text}")

    def info(self, text: str) -> None:
        if not self.quiet:
            self._write(text)

    def warn(self, text: str) -> None:
        self._write(f"{self._colour('33', 'warning:')} {text}")

    def heartbeat(self, text: str) -> None:
        """Quiet long work says it is still alive."""
        self._write(f"... {text}")

    def result(self, text: str) -> None:
        """The outcome a person waits for (shown even when quiet)."""
        self._write(text)

    @contextlib.contextmanager
    def transfer(self, label: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """Progress of a byte transfer (a download): yields `advance(n)`. A rich progress bar on a
        terminal (rich imported only then), a line before and after elsewhere (CI logs); nothing when quiet."""
        import time

        started, done, bar = time.monotonic(), [0], None
        if self.quiet:
            yield lambda amount: None
            return
        if self._isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

            stream = err() if self._stream is None else Console(file=self.stream)
            bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=stream,
                transient=True,
            )
            bar.start()
            task = bar.add_task(f"downloading {label}", total=total)
        else:
            self.info(f"downloading {label}{f' ({total / 1e6:.1f} MB)' if total else ''} ...")

        def advance(amount: int) -> None:
            done[0] += amount
            if bar is not None:
                bar.update(task, advance=amount)

        try:
            yield advance
        finally:
            if bar is not None:
                bar.stop()
        seconds = max(time.monotonic() - started, 1e-6)
        self.info(f"downloaded {label}: {done[0] / 1e6:.1f} MB in {seconds:.1f}s")

    def _isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (OSError, ValueError):
            return False

    def echo_streams(self) -> tuple[io.BufferedWriter | None, io.BufferedWriter | None]:
        """Where a program's stdout and stderr are echoed live (None: only into its logs)."""
        if self.quiet:
            return None, None
        return getattr(sys.stdout, "buffer", None), getattr(self.stream, "buffer", None)

    @contextlib.contextmanager
    def group(self, title: str, announce: bool = True) -> Iterator[None]:
        """A foldable log group in GitHub Actions; elsewhere a step header (unless `announce` is off)."""
        if not in_github_actions():
            if announce:
                self.step(title)
            yield
            return
        self._write(f"::group::{title}")
        try:
            yield
        finally:
            self._write("::endgroup::")


COMMAND = Reporter()  # the commands' own messages (info, warn, step); capabilities get theirs handed down
