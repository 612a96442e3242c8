"""One reader of HLO text as XLA's printers write it (jaxlib 0.4.x to 0.12, CPU and GPU).

Printer styles seen in dumps and read here alike:
  jaxlib 0.4.x : `add.15 = f32[] add(Arg_0.13, Arg_1.14)`, `ENTRY main.23 {`
  newer        : `%add.1 = f32[] add(f32[] %x.1, %y.1)`, `ENTRY %main.5 (x.1: f32[2]) -> f32[2] {`, and the
                 stack-frame tables (FileNames, FunctionNames, FileLocations, StackFrames) after `HloModule`.
A line is `[ROOT ]NAME = SHAPE OPCODE(OPERANDS)[, key=value]...`; a value may nest ({[ brackets and hold
quoted strings with backslash escapes (a backend_config printed as JSON in braces, or as a string).
Nothing here edits a module as a whole: readers keep their own records and ask this module what a line says;
writers change one attribute of one line and keep the rest of it byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

from xlatools.hlo.values import STRING, called_computations, metadata_fields

__all__ = [
    "LITERAL_OPCODES",
    "Computation",
    "HloSyntaxError",
    "Instruction",
    "LineKind",
    "attribute",
    "closing_bracket",
    "computation_header",
    "drop_attribute",
    "is_instruction",
    "iter_computations",
    "module_header",
    "parse_instruction",
    "parse_instruction_strict",
    "remove_attribute",
    "scan_lines",
    "set_attribute",
    "split_top_level",
]

TABLE_HEADERS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
NAME = r"[\w.\-]+"  # an instruction or computation name, without its '%'
# The start of an instruction line, as text (INSTRUCTION_START) and anchored on a newline in bytes (for chunked counts).
_START = rf"[ \t]*(?:ROOT[ \t]+)?%?{NAME}[ \t]*=[ \t]*"
INSTRUCTION_START = re.compile("^" + _START)
INSTRUCTION_START_BYTES = re.compile(b"\n" + _START.encode())
_INSTRUCTION = re.compile(rf"[ \t]*(?P<root>ROOT[ \t]+)?%?(?P<name>{NAME})[ \t]*=[ \t]*")  # then the shape
_OPCODE = re.compile(r"[ \t]*(?P<opcode>[a-z][\w\-]*)\(")
_COMPUTATION = re.compile(rf"^(?P<entry>ENTRY\s+)?%?(?P<name>{NAME})\s*(?:\(.*\)\s*->.*)?\{{\s*$")
INDEX_COMMENT = re.compile(r"/\*index=\d+\*/")  # `/*index=5*/` marks long tuples
TABLE_ROW = re.compile(r"^(\d+) (.*)$")
LITERAL_OPCODES = frozenset({"constant", "parameter"})  # their parentheses hold a literal, not operands


class HloSyntaxError(ValueError):
    """Text this reader does not understand (the line, cut short, in the message)."""


class LineKind(StrEnum):
    MODULE = "module"  # HloModule NAME, ...
    TABLE = "table"  # FileNames, FunctionNames, FileLocations, StackFrames
    TABLE_ROW = "table_row"  # `1 "file.py"`, `1 {file_name_id=1 ...}`
    COMPUTATION = "computation"  # [ENTRY ]%name [(signature) -> shape ]{
    INSTRUCTION = "instruction"
    END = "end"  # `}` or `} // name` or `}, execution_thread="x"`
    BLANK = "blank"
    COMMENT = "comment"
    OTHER = "other"


@lru_cache(maxsize=8)
def _specials(separator: str) -> re.Pattern:
    # A whole quoted string (skipped), a bracket, the separator, or a quote that opens a string never closed.
    return re.compile(STRING + r"|[(){}\[\]]" + (f"|{re.escape(separator)}" if separator else "") + '|"', re.S)


def _scan(text: str, start: int, separator: str = "") -> tuple[list[int], int | None]:
    """One scanner of brackets and strings over `text` from `start`, outside quoted strings (an unclosed string
    runs to the end), jumping from one special character to the next (a regex search). Without a separator:
    ([], index just past the bracket closing the one at `start`, or None). With one: (its indexes at depth 0,
    None)."""
    depth, index, cuts = 0, start, list[int]()
    search = _specials(separator).search
    while (found := search(text, index)) is not None:
        at, index = found.start(), found.end()
        token = text[at]
        if token == '"':
            if index - at == 1:  # never closed
                break
        elif token in "({[":
            depth += 1
        elif token in ")}]":
            depth -= 1
            if depth == 0 and not separator:
                return cuts, index
        elif depth == 0 and (len(separator) == 1 or found.group() == separator):
            cuts.append(at)
    return cuts, None


def closing_bracket(text: str, start: int) -> int | None:
    """Index just past the bracket that closes the one at `start` (any of ({[, nested; quoted strings
    respected); None when it is never closed."""
    return _scan(text, start)[1]


def _top_level_cuts(text: str, separator: str) -> list[int]:
    """Indexes of `separator` outside brackets and quoted strings."""
    return _scan(text, 0, separator)[0]


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split at `separator` outside brackets and quotes; parts stripped, a blank last part dropped."""
    parts, begin = [], 0
    for cut in _top_level_cuts(text, separator):
        parts.append(text[begin:cut].strip())
        begin = cut + len(separator)
    if text[begin:].strip():
        parts.append(text[begin:].strip())
    return parts


def is_instruction(line: str) -> bool:
    return INSTRUCTION_START.match(line) is not None  # cheaper than parse_instruction: no brackets read


def instruction_name(line: str) -> str | None:
    """The name an instruction line defines (without '%'); None for any other line."""
    found = _INSTRUCTION.match(line)
    return found["name"] if found else None


def computation_header(line: str) -> tuple[str, bool] | None:
    """(name, is_entry) of a computation's opening line; None for any other line."""
    if is_instruction(line):
        return None
    found = _COMPUTATION.match(INDEX_COMMENT.sub("", line.strip()))
    return (found["name"], bool(found["entry"])) if found else None


def module_header(line: str) -> tuple[str, str] | None:
    """(name, the rest after the name) of an `HloModule NAME, key=value...` line."""
    stripped = line.strip()
    if not stripped.startswith("HloModule"):
        return None
    head = stripped[len("HloModule") :].strip()
    name = re.split(r"[\s,]", head, maxsplit=1)[0]
    return name, head[len(name) :]


def scan_lines(lines: Iterable[str]) -> Iterator[tuple[LineKind, str]]:
    """Each line (trailing newline removed) with what it is; stack-frame tables end at a blank line or at
    the first computation or instruction."""
    in_table = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        if not stripped:
            in_table, kind = False, LineKind.BLANK
        elif stripped in TABLE_HEADERS:
            in_table, kind = True, LineKind.TABLE
        elif stripped.startswith("HloModule"):
            in_table, kind = False, LineKind.MODULE
        elif is_instruction(line):
            in_table, kind = False, LineKind.INSTRUCTION
        elif computation_header(stripped):
            in_table, kind = False, LineKind.COMPUTATION
        elif in_table:
            kind = LineKind.TABLE_ROW
        elif stripped.startswith("}"):
            kind = LineKind.END
        elif stripped.startswith("//"):
            kind = LineKind.COMMENT
        else:
            kind = LineKind.OTHER
        yield kind, line


@dataclass(frozen=True)
class Computation:
    name: str
    entry: bool
    header: str  # the opening line as printed
    lines: list[str] = field(default_factory=list)  # its instruction lines, as printed


def iter_computations(text: str | Iterable[str]) -> Iterator[Computation]:
    """The computations of a module's text, in printed order, with their instruction lines."""
    current: Computation | None = None
    for kind, line in scan_lines(text.splitlines() if isinstance(text, str) else text):
        if kind is LineKind.COMPUTATION:
            name, entry = computation_header(line) or ("", False)
            current = Computation(name, entry, line)
        elif kind is LineKind.INSTRUCTION and current is not None:
            current.lines.append(line)
        elif kind is LineKind.END and current is not None:
            yield current
            current = None


@dataclass(frozen=True)
class Instruction:
    """What one instruction line says. `attributes`: key -> the value's text as printed, in line order."""

    name: str
    shape: str
    opcode: str
    operands: list[str]
    attributes: dict[str, str]
    is_root: bool
    payload: str = ""  # inside the parentheses: a constant's literal, a parameter's number, the operand list
    tail: str = ""  # everything after the closing parenthesis, as printed (", dimensions={0}, to_apply=%add")
    # (key, start of its ", key=", end of its value) in `tail`: where each attribute is printed
    spans: tuple[tuple[str, int, int], ...] = field(default=(), repr=False, compare=False)

    @property
    def called(self) -> list[str]:
        """The computations the instruction calls (to_apply=, calls=, branch_computations={...}, ...)."""
        return called_computations(self.attributes)

    def tail_without(self, key: str) -> str:
        """`tail` without `, key=value` (every other byte kept)."""
        tail = self.tail
        for name, start, end in reversed(self.spans):
            if name == key:
                tail = tail[:start] + tail[end:]
        return tail

    @property
    def metadata(self) -> dict[str, str]:
        return metadata_fields(self.attributes.get("metadata", ""))


def _spans(line: str) -> tuple[re.Match, int, int, int, int]:
    """(match, shape end, '(' index, just past ')', start of rest) of an instruction line, in line positions."""
    found = _INSTRUCTION.match(line)
    if not found:
        raise HloSyntaxError(f"not an instruction: {line.strip()[:200]}")
    rest = found.end()
    if line.startswith("(", rest):
        shape_end = closing_bracket(line, rest)
        if shape_end is None:
            raise HloSyntaxError(f"unbalanced () in: {line.strip()[:200]}")
    else:
        space = line.find(" ", rest)
        shape_end = space if space != -1 else len(line)
    opcode = _OPCODE.match(line, shape_end)
    if not opcode:
        raise HloSyntaxError(f"no opcode after the shape in: {line.strip()[:200]}")
    close = closing_bracket(line, opcode.end() - 1)
    if close is None:
        raise HloSyntaxError(f"unbalanced () in: {line.strip()[:200]}")
    return found, shape_end, opcode.end() - 1, close, rest


def _attribute_spans(line: str, tail_start: int) -> list[tuple[str, int, int, int]]:
    """(key, index of the ',' before it, start of value, end of value) of each `, key=value` after `tail_start`."""
    tail = line[tail_start : len(line.rstrip(" \t\r\n"))]
    cuts = list(_top_level_cuts(tail, ","))
    spans = []
    for cut, following in zip(cuts, [*cuts[1:], len(tail)]):
        key, equals, _ = tail[cut + 1 : following].partition("=")
        if equals and key.strip():
            spans.append((key.strip(), tail_start + cut, tail_start + cut + 2 + len(key), tail_start + following))
    return spans


def parse_instruction_strict(line: str) -> Instruction:
    """Instruction of one line; HloSyntaxError when it is not one or its brackets do not close."""
    found, shape_end, open_at, close, rest = _spans(line)
    opcode = line[shape_end:open_at].strip()
    inside = line[open_at + 1 : close - 1]
    operands = [] if opcode in LITERAL_OPCODES else [p.split()[-1].lstrip("%") for p in split_top_level(inside) if p]
    spans = _attribute_spans(line, close)
    attributes = {key: line[value:end].strip() for key, _, value, end in spans}
    return Instruction(
        found["name"],
        line[rest:shape_end].strip(),
        opcode,
        operands,
        attributes,
        bool(found["root"]),
        inside,
        line[close : len(line.rstrip(" \t\r\n"))],
        tuple((key, start - close, end - close) for key, start, _, end in spans),
    )


def parse_instruction(line: str) -> Instruction | None:
    """Instruction of one line; None for any other line (or one whose brackets never close)."""
    try:
        return parse_instruction_strict(line)
    except HloSyntaxError:
        return None


def attribute(line: str, key: str) -> str | None:
    """The printed value of attribute `key` on an instruction line, or None."""
    return inst.attributes.get(key) if (inst := parse_instruction(line)) else None


def set_attribute(line: str, key: str, value: str) -> str:
    """The line with `key=value`: its value replaced where present, else appended after the last
    attribute; every other byte of the line kept."""
    _, _, _, close, _ = _spans(line)
    spans = _attribute_spans(line, close)
    for name, _, value_start, value_end in spans:
        if name == key:
            return line[:value_start] + value + line[value_end:]
    end = len(line.rstrip(" \t\r\n"))
    return f"{line[:end]}, {key}={value}{line[end:]}"


def remove_attribute(line: str, key: str) -> str:
    """The line without `, key=value` (every occurrence); the line itself when it has none."""
    if f"{key}=" not in line:
        return line
    try:
        _, _, _, close, _ = _spans(line)
    except HloSyntaxError:
        return line
    return line[:close] + drop_attribute(line[close:], key)


def drop_attribute(attributes: str, key: str) -> str:
    """An instruction's attribute text (`, a={..}, b=x`) without `, key=value`."""
    for name, start, _, end in reversed(_attribute_spans(attributes, 0)):
        if name == key:
            attributes = attributes[:start] + attributes[end:]
    return attributes
