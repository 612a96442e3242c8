"""VS Code's JSON with comments (launch.json): read it, and add or replace configurations by
name without touching anything else in the text (comments, order, other configurations).

Written here rather than taken from a library: the Python JSON5/JSONC parsers read such files
but write them back without their comments, which would clobber a user's file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from xlatools.errors import UsageError


@dataclass
class _Layout:
    array_open: int | None = None  # index of the `[` of the top-level "configurations"
    array_close: int | None = None
    elements: list[tuple[int, int]] = field(default_factory=list)  # spans of its objects, end inclusive
    object_close: int | None = None  # the top-level `}`
    has_comments: bool = False


def _tokens(text: str, label: str):
    """(index, token) for structural characters and strings, outside comments."""
    at, size = 0, len(text)
    while at < size:
        char = text[at]
        if char == '"':
            end = at + 1
            while end < size and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            yield at, text[at : end + 1]
            at = end + 1
        elif text.startswith("//", at):
            yield at, "//"
            newline = text.find("\n", at)
            at = size if newline < 0 else newline
        elif text.startswith("/*", at):
            yield at, "/*"
            close = text.find("*/", at + 2)
            if close < 0:
                raise UsageError(f"{label}: a /* comment is never closed")
            at = close + 2
        else:
            if char in "{}[],:":
                yield at, char
            at += 1


def _blank_comments(text: str, label: str) -> str:
    """The text with every comment replaced by spaces: same length, so indices still point into `text`."""
    out = list(text)
    for at, token in _tokens(text, label):
        if token in ("//", "/*"):
            end = text.find("\n", at) if token == "//" else text.find("*/", at) + 2
            end = len(text) if end < 0 else end
            out[at:end] = [" "] * (end - at)
    return "".join(out)


def strip(text: str, label: str) -> str:
    """The text as strict JSON: comments blanked, trailing commas dropped."""
    out = list(_blank_comments(text, label))
    previous_comma = None
    for at, token in _tokens(text, label):
        if token in ("//", "/*"):
            continue
        if token in "}]" and previous_comma is not None and not "".join(out[previous_comma + 1 : at]).strip():
            out[previous_comma] = " "
        previous_comma = at if token == "," else None
    return "".join(out)


def loads(text: str, label: str):
    try:
        return json.loads(strip(text, label))
    except (ValueError, RecursionError) as exc:
        why = exc if isinstance(exc, ValueError) else "nested too deeply"
        raise UsageError(
            f"{label}: not valid JSON with comments ({why})",
            hint="fix the file (VS Code shows where), or move it away and run again",
        ) from None


def _layout(text: str, label: str) -> _Layout:
    layout, depth, key, last_string = _Layout(), 0, None, None
    element_start = None
    for at, token in _tokens(text, label):
        if token in ("//", "/*"):
            layout.has_comments = True
        elif token.startswith('"'):
            last_string = token
        elif token == ":" and depth == 1:
            key = json.loads(last_string)
        elif token in "{[":
            depth += 1
            if token == "[" and depth == 2 and key == "configurations":
                layout.array_open = at
            elif token == "{" and depth == 3 and layout.array_open is not None and layout.array_close is None:
                element_start = at
        elif token in "}]":
            if token == "}" and depth == 3 and element_start is not None:
                layout.elements.append((element_start, at))
                element_start = None
            if token == "]" and depth == 2 and layout.array_open is not None and layout.array_close is None:
                layout.array_close = at
            if token == "}" and depth == 1:
                layout.object_close = at
            depth -= 1
    return layout


def _indented(config: dict, indent: str) -> str:  # one launch.json entry, as VS Code's schema spells it
    return json.dumps(config, indent=4).replace("\n", "\n" + indent)


def merge_configurations(text: str | None, configurations: list[dict], label: str) -> str:
    """`text` (a launch.json, or None) with `configurations` in it: same-named ones replaced in place (a name
    listed more than once keeps its first place only), new ones appended; everything else kept as written."""
    if text is None or not text.strip():
        return json.dumps({"version": "0.2.0", "configurations": configurations}, indent=4) + "\n"
    data = loads(text, label)
    listed = data.get("configurations", []) if isinstance(data, dict) else None
    if not isinstance(listed, list) or not all(isinstance(item, dict) for item in listed):
        raise UsageError(
            f'{label}: expected an object with a "configurations" list of objects',
            hint="fix the file, or move it away and run again",
        )
    layout = _layout(text, label)
    code = _blank_comments(text, label)  # where the JSON itself ends: a comma after a // comment would vanish in it
    if layout.array_open is None:  # no list yet: add one after the object's last member
        items = ",\n        ".join(_indented(c, "        ") for c in configurations)
        before = code[: layout.object_close].rstrip()
        comma = "" if before.endswith(("{", ",")) else ","
        at = len(before)
        return text[:at] + comma + '\n    "configurations": [\n        ' + items + "\n    ]" + text[at:]
    by_name = {c["name"]: c for c in configurations}
    edits, placed = [], set()  # (start, end exclusive, replacement)
    previous_end = None
    for start, end in layout.elements:
        name = loads(text[start : end + 1], label).get("name")
        if name in placed and previous_end is not None:  # a second one of our names: removed with its comma
            edits.append((previous_end + 1, end + 1, ""))
        elif name in by_name:
            line_start = text.rfind("\n", 0, start) + 1
            edits.append((start, end + 1, _indented(by_name[name], text[line_start:start])))
            placed.add(name)
        previous_end = end
    new = [c for c in configurations if c["name"] not in placed]
    if new:
        last = code[: layout.array_close].rstrip()
        comma = "" if last.endswith(("[", ",")) else ","
        insert_at = len(last)  # after the last element (or `[`); comments and spacing after it stay as written
        addition = comma + "".join("\n        " + _indented(c, "        ") + "," for c in new)[:-1]
        edits.append((insert_at, insert_at, addition))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
