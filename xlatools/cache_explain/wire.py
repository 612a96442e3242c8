"""Protocol-buffer wire format read without a schema (pure): field-number paths and their values, so two
serialised messages (jax's compile options as it hashed them) can say where they differ."""

from __future__ import annotations

MAX_DEPTH = 8


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _message(data: bytes, depth: int) -> list[tuple[int, object]] | None:
    """(field number, value) pairs; a value is an int, bytes, or a nested list. None: not a message."""
    fields: list[tuple[int, object]] = []
    at = 0
    try:
        while at < len(data):
            tag, at = _varint(data, at)
            number, kind = tag >> 3, tag & 7
            if number == 0:
                return None
            if kind == 0:
                value, at = _varint(data, at)
                fields.append((number, value))
            elif kind in (1, 5):
                size = 8 if kind == 1 else 4
                if at + size > len(data):
                    return None
                fields.append((number, int.from_bytes(data[at : at + size], "little")))
                at += size
            elif kind == 2:
                size, at = _varint(data, at)
                if at + size > len(data):
                    return None
                chunk = data[at : at + size]
                at += size
                nested = _message(chunk, depth + 1) if depth < MAX_DEPTH and chunk else None
                fields.append((number, nested if nested else chunk))
            else:
                return None
    except ValueError:
        return None
    return fields


def _show(value: bytes) -> str:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return value.hex()
    return repr(text) if text.isprintable() else value.hex()


def leaves(data: bytes) -> dict[str, str]:
    """`3.2.17` -> value for every scalar of the message (a repeated field's items: `7[0]`, `7[1]`)."""
    out: dict[str, str] = {}

    def walk(fields: list[tuple[int, object]], prefix: str) -> None:
        counts: dict[int, int] = {}
        for number, _ in fields:
            counts[number] = counts.get(number, 0) + 1
        seen: dict[int, int] = {}
        for number, value in fields:
            index = seen.get(number, 0)
            seen[number] = index + 1
            path = f"{prefix}{number}" + (f"[{index}]" if counts[number] > 1 else "")
            if isinstance(value, list):
                walk(value, path + ".")
            else:
                out[path] = str(value) if isinstance(value, int) else _show(value)  # type: ignore[arg-type]

    walk(_message(data, 0) or [], "")
    return out


def differences(a: bytes, b: bytes, limit: int = 8) -> list[tuple[str, str | None, str | None]]:
    """The field paths whose values differ (absent on one side: None), at most `limit`."""
    left, right = leaves(a), leaves(b)
    paths = sorted(set(left) | set(right), key=lambda p: [int(x) if x.isdigit() else x for x in _split(p)])
    found = [(p, left.get(p), right.get(p)) for p in paths if left.get(p) != right.get(p)]
    return found[:limit]


def _split(path: str) -> list[str]:
    return path.replace("[", ".[").split(".")
