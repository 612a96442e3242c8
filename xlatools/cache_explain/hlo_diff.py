"""The first instruction where two HLO modules differ (pure), read through the one HLO grammar and compared in
canonical form (run/hlo_canon.py: names, ids and metadata do not count), shown as printed."""

from __future__ import annotations

from dataclasses import dataclass

from xlatools.hlo.grammar import LineKind, computation_header, parse_instruction, remove_attribute, scan_lines
from xlatools.run.hlo_canon import canonical_hlo

_SKIPPED = (LineKind.TABLE, LineKind.TABLE_ROW, LineKind.BLANK)


@dataclass(frozen=True)
class HloDifference:
    computation: str | None  # where (None: the module header)
    before: str | None  # the line as printed, metadata left out (None: this module ended first)
    after: str | None
    constant: bool  # a constant's value differs (a value baked into the program)


def _lines(text: str) -> tuple[list[str], list[str], list[str | None]]:
    """(canonical lines, printed lines, computation of each line): one of each per line kept."""
    printed, where, current = [], [], None
    for kind, line in scan_lines(text.splitlines()):
        if kind in _SKIPPED:
            continue
        if kind is LineKind.COMPUTATION:
            current = (computation_header(line) or (None, False))[0]
        printed.append(remove_attribute(line, "metadata").strip() if kind is LineKind.INSTRUCTION else line.strip())
        where.append(current)
    canonical = canonical_hlo(text).splitlines()
    if len(canonical) != len(printed):  # not the same walk: show the canonical lines themselves
        return canonical, canonical, [None] * len(canonical)
    return canonical, printed, where


def _is_constant(*lines: str | None) -> bool:
    parsed = [parse_instruction(line) for line in lines if line]
    return bool(parsed) and all(p is not None and p.opcode == "constant" for p in parsed)


def first_difference(before: str, after: str) -> HloDifference | None:
    """None: the same program (as XLA would compile it)."""
    a, b = _lines(before), _lines(after)
    body_a, body_b = list(zip(*a))[1:], list(zip(*b))[1:]  # after the HloModule line
    for index in range(max(len(body_a), len(body_b))):
        x = body_a[index] if index < len(body_a) else None
        y = body_b[index] if index < len(body_b) else None
        if x is None or y is None or x[0] != y[0]:
            line_a, line_b = (x[1] if x else None), (y[1] if y else None)
            return HloDifference((x or y)[2], line_a, line_b, _is_constant(line_a, line_b))  # type: ignore[index]
    if a[0][:1] != b[0][:1]:
        return HloDifference(None, a[1][0] if a[1] else None, b[1][0] if b[1] else None, False)
    return None
