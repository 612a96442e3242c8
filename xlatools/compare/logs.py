"""Bounded views of a bundle's logs: a tail, and a searchable window of at most LIMIT bytes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TAIL_LINES = 60
FULL_LIMIT = 1 << 20  # bytes of a log embedded in the report (its end, when larger)


@dataclass
class LogView:
    name: str
    size: int
    tail: list[str]
    lines: list[str]  # the last FULL_LIMIT bytes, whole lines
    truncated: bool  # the log is larger than what `lines` holds


def read_end(path: Path, limit: int) -> tuple[str, bool]:
    """The last `limit` bytes of a file, starting at a line boundary (reads only those bytes)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        if size > limit:
            handle.seek(size - limit)
            data = handle.read(limit)
            data = data[data.find(b"\n") + 1 :]
        else:
            data = handle.read()
    return data.decode("utf-8", errors="replace"), size > limit


def log_view(path: Path) -> LogView:
    text, truncated = read_end(path, FULL_LIMIT)
    lines = text.splitlines()
    return LogView(path.name, os.path.getsize(path), lines[-TAIL_LINES:], lines, truncated)


def bundle_logs(bundle: Path | None) -> list[LogView]:
    """stdout.log, stderr.log and any other *.log at the top of the bundle."""
    if bundle is None:
        return []
    names = sorted(bundle.glob("*.log"), key=lambda p: (p.name not in ("stdout.log", "stderr.log"), p.name))
    return [log_view(p) for p in names if p.is_file()]
