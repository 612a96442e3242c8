"""Just enough Starlark reading to edit pins in place (text in, text out).

We never re-print a file: we find the exact character span of one value (a top-level
`NAME = "..."` or one keyword argument of one call) and replace only that span, so
comments, quoting and formatting elsewhere stay as they were.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9][0-9A-Za-z_.]*")
_STRING_START = re.compile(r"(?:[rRbB]{1,2})?('''|\"\"\"|'|\")")
_OPEN = "([{"
_CLOSE = ")]}"


class StarlarkSyntaxError(ValueError):
    pass


class NotALiteral(StarlarkSyntaxError):
    """A value xlatools cannot rewrite exactly (an expression, a name, a second assignment)."""


@dataclass(frozen=True)
class Token:
    kind: str  # name, string, number, op, comment, newline
    start: int
    end: int
    text: str
    depth: int  # bracket depth before the token


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    depth = 0
    pos = 0
    length = len(text)
    while pos < length:
        char = text[pos]
        if char in " \t\r\\":
            pos += 1
            continue
        if char == "\n":
            tokens.append(Token("newline", pos, pos + 1, char, depth))
            pos += 1
            continue
        if char == "#":
            end = text.find("\n", pos)
            end = length if end < 0 else end
            tokens.append(Token("comment", pos, end, text[pos:end], depth))
            pos = end
            continue
        string = _STRING_START.match(text, pos)
        if string:
            end = _string_end(text, string.end(), string.group(1), pos)
            tokens.append(Token("string", pos, end, text[pos:end], depth))
            pos = end
            continue
        name = _NAME.match(text, pos)
        if name:
            tokens.append(Token("name", pos, name.end(), name.group(), depth))
            pos = name.end()
            continue
        number = _NUMBER.match(text, pos)
        if number:
            tokens.append(Token("number", pos, number.end(), number.group(), depth))
            pos = number.end()
            continue
        if char in _OPEN:
            tokens.append(Token("op", pos, pos + 1, char, depth))
            depth += 1
        elif char in _CLOSE:
            depth = max(depth - 1, 0)
            tokens.append(Token("op", pos, pos + 1, char, depth))
        else:
            two = text[pos : pos + 2]
            width = 2 if two in ("==", "!=", "<=", ">=", "+=", "-=", "**", "//") else 1
            tokens.append(Token("op", pos, pos + width, text[pos : pos + width], depth))
            pos += width
            continue
        pos += 1
    return tokens


def _string_end(text: str, pos: int, quote: str, start: int) -> int:
    while pos < len(text):
        if text[pos] == "\\":
            pos += 2
            continue
        if text.startswith(quote, pos):
            return pos + len(quote)
        if text[pos] == "\n" and len(quote) == 1:
            break
        pos += 1
    line = text.count("\n", 0, start) + 1
    raise StarlarkSyntaxError(f"unterminated string starting on line {line}")


# ---------------------------------------------------------------- top-level assignments


@dataclass(frozen=True)
class Span:
    start: int
    end: int

    def of(self, text: str) -> str:
        return text[self.start : self.end]


def find_assignment(text: str, variable: str) -> Span | None:
    """The value span of the module-level `VARIABLE = <literal>` (a string, usually); None when there is
    none. What cannot be edited exactly is refused (NotALiteral): a value that is not one literal
    ("a" + "b", a call, a name, "%s" % x) or a variable assigned more than once."""
    tokens = [t for t in tokenize(text) if t.kind != "comment"]
    found: list[tuple[Span, bool]] = []
    for index, token in enumerate(tokens[:-2]):
        if token.kind == "name" and token.text == variable and token.depth == 0:
            if tokens[index + 1].text == "=" and _starts_line(text, token.start):
                value = tokens[index + 2]
                after = tokens[index + 3] if index + 3 < len(tokens) else None
                whole = value.kind in ("string", "number") and (after is None or after.kind == "newline")
                found.append((Span(value.start, value.end), whole))
    if len(found) > 1:
        lines = ", ".join(str(text.count("\n", 0, span.start) + 1) for span, _ in found)
        raise NotALiteral(f"`{variable}` is assigned {len(found)} times (lines {lines})")
    if found and not found[0][1]:
        span = found[0][0]
        line = text.count("\n", 0, span.start) + 1
        raise NotALiteral(f"`{variable}` on line {line} is not a single literal value")
    return found[0][0] if found else None


def _starts_line(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    return text[line_start:offset].strip() == ""


# ---------------------------------------------------------------- calls and keyword arguments


@dataclass(frozen=True)
class Arg:
    key: str | None
    start: int  # first character of the argument (its key, or its value)
    value: Span
    comma_end: int | None  # just after the trailing comma, if any


@dataclass(frozen=True)
class Call:
    name: str
    start: int
    open: int
    close: int  # offset of the closing parenthesis
    args: tuple[Arg, ...]

    def kwarg(self, key: str) -> Arg | None:
        for arg in self.args:
            if arg.key == key:
                return arg
        return None


def find_calls(text: str, function: str) -> list[Call]:
    tokens = [t for t in tokenize(text) if t.kind not in ("comment", "newline")]
    calls = []
    for index, token in enumerate(tokens[:-1]):
        if token.kind == "name" and token.text == function and tokens[index + 1].text == "(":
            previous = tokens[index - 1] if index else None
            if previous is not None and previous.text == ".":
                continue  # a method, e.g. native.http_archive is not ours to confuse
            calls.append(_parse_call(tokens, index))
    return calls


def _parse_call(tokens: list[Token], index: int) -> Call:
    name, open_paren = tokens[index], tokens[index + 1]
    inner = open_paren.depth + 1
    args: list[Arg] = []
    position = index + 2
    while position < len(tokens):
        token = tokens[position]
        if token.text == ")" and token.depth == open_paren.depth:
            return Call(name.text, name.start, open_paren.start, token.start, tuple(args))
        # One argument: up to the next top-level comma or the closing parenthesis.
        first = position
        key = None
        if token.kind == "name" and position + 1 < len(tokens) and tokens[position + 1].text == "=":
            key = token.text
            position += 2
        value_first = position
        while position < len(tokens):
            current = tokens[position]
            if current.depth == inner and current.text == ",":
                break
            if current.depth == open_paren.depth and current.text == ")":
                break
            position += 1
        if position >= len(tokens):
            break
        if value_first == position:
            raise StarlarkSyntaxError(f"empty argument in {name.text}(...)")
        value = Span(tokens[value_first].start, tokens[position - 1].end)
        comma_end = None
        if tokens[position].text == ",":
            comma_end = tokens[position].end
            position += 1
        args.append(Arg(key, tokens[first].start, value, comma_end))
    raise StarlarkSyntaxError(f"unclosed call {name.text}(...)")


def find_call(text: str, function: str, key: str, value: str) -> Call | None:
    """The one call `function(..., key = "value", ...)`, e.g. http_archive(name = "xla")."""
    for call in find_calls(text, function):
        arg = call.kwarg(key)
        if arg is not None and literal(text, arg.value) == value:
            return call
    return None


def literal(text: str, span: Span):
    """The Python value of a literal (string, list of strings, int), or None if not a literal."""
    source = span.of(text)
    try:
        value = ast.literal_eval(source.strip())
    except (ValueError, SyntaxError):
        return None
    return value


# ---------------------------------------------------------------- rendering and edits


def quote(value: str, like: str = '"') -> str:
    """A string literal for value, in the quote style of `like` (the literal it replaces)."""
    mark = "'" if like.lstrip("rRbB").startswith("'") else '"'
    escaped = value.replace("\\", "\\\\").replace(mark, "\\" + mark)
    return f"{mark}{escaped}{mark}"


def render_value(value, text: str, arg: Arg | None, indent: str) -> str:
    """Render a new value in the style of the one it replaces (one line or one item per line)."""
    if isinstance(value, str):
        return quote(value, arg.value.of(text) if arg else '"')
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        items = [render_value(item, text, None, indent) for item in value]
        multiline = len(items) > 1 or (arg is not None and "\n" in arg.value.of(text))
        if not multiline:
            return "[" + ", ".join(items) + "]"
        inner = indent + "    "
        return "[\n" + "".join(f"{inner}{item},\n" for item in items) + f"{indent}]"
    raise TypeError(f"cannot render {value!r} as Starlark")


def indent_of(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    prefix = text[line_start:offset]
    return prefix[: len(prefix) - len(prefix.lstrip())]


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    replacement: str


def apply_edits(text: str, edits: list[Edit]) -> str:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.replacement + text[edit.end :]
    return text


def set_kwarg(text: str, call: Call, key: str, value) -> list[Edit]:
    """Edits making `key = value` true in `call`; none if it already holds that value."""
    arg = call.kwarg(key)
    if arg is not None:
        if literal(text, arg.value) == value:
            return []
        indent = indent_of(text, arg.start)
        return [Edit(arg.value.start, arg.value.end, render_value(value, text, arg, indent))]
    if not call.args:
        return [Edit(call.close, call.close, f"{key} = {render_value(value, text, None, '')}")]
    last = call.args[-1]
    if "\n" not in text[call.open : call.close]:  # a one-line call: f(a = 1, b = 2)
        rendered = render_value(value, text, None, "")
        if last.comma_end is None:
            return [Edit(last.value.end, last.value.end, f", {key} = {rendered}")]
        return [Edit(last.comma_end, last.comma_end, f" {key} = {rendered},")]
    indent = indent_of(text, last.start)
    rendered = render_value(value, text, None, indent)
    comma = "" if last.comma_end is not None else ","
    anchor = last.comma_end if last.comma_end is not None else last.value.end
    # After the last argument (and any comment on its line), one argument per line.
    line_end = text.find("\n", anchor)
    line_end = len(text) if line_end < 0 else line_end
    if call.close < line_end:  # the call closes on the last argument's line: `urls = [...])`
        return [Edit(anchor, anchor, f"{comma}\n{indent}{key} = {rendered}")]
    edits = [Edit(anchor, anchor, comma)] if comma else []
    edits.append(Edit(line_end, line_end, f"\n{indent}{key} = {rendered},"))
    return edits


def remove_kwarg(text: str, call: Call, key: str) -> list[Edit]:
    arg = call.kwarg(key)
    if arg is None:
        return []
    end = arg.comma_end if arg.comma_end is not None else arg.value.end
    line_start = text.rfind("\n", 0, arg.start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    own_line = text[line_start : arg.start].strip() == "" and text[end:line_end].strip() == ""
    if own_line:
        return [Edit(line_start, line_end + 1, "")]
    while end < len(text) and text[end] == " ":
        end += 1
    return [Edit(arg.start, end, "")]


def set_assignment(text: str, variable: str, value: str) -> list[Edit]:
    span = find_assignment(text, variable)
    if span is None:
        raise StarlarkSyntaxError(f"no top-level `{variable} = ...`")
    if literal(text, span) == value:
        return []
    return [Edit(span.start, span.end, quote(value, span.of(text)))]
