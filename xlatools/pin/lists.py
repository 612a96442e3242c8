"""Item-level edits of a Starlark list literal, so a list's comments survive (text in, text out).

Used for patch lists: upstream's workspace.bzl carries an empty `patch_file = [ ... ]` whose
only content is a comment; adding and removing our items must leave that comment alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from xlatools.pin.starlark import Edit, Span, indent_of, quote, tokenize


@dataclass(frozen=True)
class Item:
    value: str
    start: int
    value_end: int  # just after the string literal
    end: int  # just after its comma, if any


def list_items(text: str, span: Span) -> tuple[list[Item], bool] | None:
    """The string items of a list literal at span, and whether the list holds comments.
    None if the value is not a plain list of strings."""
    tokens = [t for t in tokenize(text) if span.start <= t.start < span.end and t.kind != "newline"]
    if not tokens or tokens[0].text != "[" or tokens[-1].text != "]":
        return None
    inner = tokens[1:-1]
    items, comments = [], False
    index = 0
    while index < len(inner):
        token = inner[index]
        if token.kind == "comment":
            comments = True
        elif token.kind == "string":
            end = token.end
            if index + 1 < len(inner) and inner[index + 1].text == ",":
                end = inner[index + 1].end
                index += 1
            items.append(Item(ast.literal_eval(token.text), token.start, token.end, end))
        else:
            return None
        index += 1
    return items, comments


def edit_list(text: str, span: Span, drop: list[Item], add: list[str], like: str = '"') -> list[Edit]:
    """Remove some items (their whole line when alone on it) and append others before the closing
    bracket, leaving every comment and the other items as they are."""
    edits = []
    for item in drop:
        line_start = text.rfind("\n", 0, item.start) + 1
        line_end = text.find("\n", item.end)
        if text[line_start : item.start].strip() == "" and text[item.end : line_end].strip() == "":
            edits.append(Edit(line_start, line_end + 1, ""))
        else:
            end = item.end
            while end < len(text) and text[end] == " ":
                end += 1
            edits.append(Edit(item.start, end, ""))
    if not add:
        return edits
    close = span.end - 1
    body = text[span.start + 1 : close]
    if "\n" in body:
        close_line = text.rfind("\n", 0, close) + 1
        indent = (
            indent_of(text, close) + "    "
            if text[close_line:close].strip() == ""
            else indent_of(text, span.start) + "    "
        )
        block = "".join(f"{indent}{quote(value, like)},\n" for value in add)
        if text[close_line:close].strip() == "":
            edits.append(Edit(close_line, close_line, block))
        else:
            edits.append(Edit(close, close, "\n" + block + indent_of(text, span.start)))
        return edits
    kept = [item for item in list_items(text, span)[0] if item not in drop]
    rendered = ", ".join(quote(value, like) for value in add)
    if not kept:
        return edits + [Edit(span.start + 1, close, rendered)]
    return edits + [Edit(kept[-1].value_end, kept[-1].value_end, ", " + rendered)]
