"""Bounded unified diffs of canonical HLO text and normalised emitted code."""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass

DEFAULT_LIMIT = 200  # diff lines shown unless --full
INPUT_LIMIT = 20_000  # lines of each text fed to difflib unless --full (its cost grows with n*m)


@dataclass
class TextDiff:
    """A unified diff of two texts (canonical HLO, normalised emitted code), cut at `limit` lines unless full."""

    title: str
    lines: list[str]
    truncated: bool
    identical: bool


def text_diff(
    title: str, a: str | None, b: str | None, a_name: str, b_name: str, full: bool = False, limit: int = DEFAULT_LIMIT
) -> TextDiff:
    if a is None or b is None:
        missing = a_name if a is None else b_name
        return TextDiff(title, [f"(no text for {missing})"], truncated=False, identical=False)
    if a == b:
        return TextDiff(title, [], truncated=False, identical=True)
    a_lines, b_lines = a.splitlines(), b.splitlines()
    cut = False
    if not full and max(len(a_lines), len(b_lines)) > INPUT_LIMIT:
        a_lines, b_lines, cut = a_lines[:INPUT_LIMIT], b_lines[:INPUT_LIMIT], True
    lines = difflib.unified_diff(a_lines, b_lines, a_name, b_name, n=3, lineterm="")
    if full:
        return TextDiff(title, list(lines), truncated=False, identical=False)
    shown = list(itertools.islice(lines, limit + 1))
    truncated = cut or len(shown) > limit
    return TextDiff(title, shown[:limit], truncated=truncated, identical=False)
