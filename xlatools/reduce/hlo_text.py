"""HLO module text as a structure to edit: computations of instructions, and back to text.

jaxlib has no Python API that creates instructions, so the reducer edits text: this
module reads what XLA's printers write (jaxlib 0.4.x `add.3 = f32[] add(a, b)` and
newer `%add.3 = f32[] add(f32[] %a, %b)`, signatures or none, stack-frame tables)
into Module / Computation / Instruction records and prints them again. Only what
the reducer needs is understood (name, shape, opcode, operands, attributes, called
computations, ROOT); the rest of a line is carried through untouched, and every
printed candidate is parsed again by the target jaxlib before anyone trusts it.

Printed form: the module header keeps only the name and replica/partition counts
(the entry layout and per-output attributes would go stale as parameters and outputs
change), computations carry no signature (the parser derives it), operands are bare
names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

_TABLE_HEADERS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
_COMPUTATION = re.compile(r"^(?P<entry>ENTRY\s+)?%?(?P<name>[\w.\-]+)\s*(?:\(.*\)\s*->.*)?\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?P<root>ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<rest>.*)$")
_OPCODE = re.compile(r"\s*(?P<opcode>[a-z][\w\-]*)\(")
_SINGLE_CALLS = ("to_apply", "calls", "condition", "body", "true_computation", "false_computation", "comparator")
_LIST_CALLS = ("branch_computations", "called_computations")
_CALL_ATTRIBUTE = re.compile(r"(?P<key>%s)=%%?(?P<name>[\w.\-]+)" % "|".join(_SINGLE_CALLS))
_CALL_LIST = re.compile(r"(?P<key>%s)=\{(?P<names>[^}]*)\}" % "|".join(_LIST_CALLS))
_HEADER_KEEP = re.compile(r"(?:replica_count|num_partitions)=\d+")
LITERAL_OPCODES = frozenset({"constant", "parameter"})  # their parentheses hold a literal, not operands


class HloSyntaxError(ValueError):
    """Text this reader does not understand (line number and line in the message)."""


@dataclass
class Instruction:
    name: str
    shape: str
    opcode: str
    operands: list[str]
    payload: str = ""  # the literal of constant(...) / the number of parameter(...)
    attributes: str = ""  # everything after the closing parenthesis, e.g. ", dimensions={0}, to_apply=%add"
    metadata: str = ""  # `metadata={...}`, kept apart so that it can be left out
    root: bool = False

    @property
    def parameter_number(self) -> int | None:
        return int(self.payload) if self.opcode == "parameter" else None

    @property
    def called(self) -> list[str]:
        names = [m["name"] for m in _CALL_ATTRIBUTE.finditer(self.attributes)]
        for match in _CALL_LIST.finditer(self.attributes):
            names += [n.strip().lstrip("%") for n in match["names"].split(",") if n.strip()]
        return names

    @property
    def is_array(self) -> bool:
        """An array value (not a tuple or token): the kind a new parameter or constant can stand for."""
        return not self.shape.startswith("(") and not self.shape.startswith("token")

    def rename_called(self, old: str, new: str) -> "Instruction":
        pattern = re.compile(r"(?<=[=,{ ])%%?%s(?=[,} ]|$)" % re.escape(old))
        return replace(self, attributes=pattern.sub(("%" if "%" in self.attributes else "") + new, self.attributes))


@dataclass
class Computation:
    name: str
    instructions: list[Instruction]
    entry: bool = False

    @property
    def root(self) -> Instruction:
        return next((i for i in self.instructions if i.root), self.instructions[-1])

    def get(self, name: str) -> Instruction | None:
        return next((i for i in self.instructions if i.name == name), None)

    def parameters(self) -> list[Instruction]:
        return sorted((i for i in self.instructions if i.opcode == "parameter"), key=lambda i: i.parameter_number or 0)


@dataclass
class Module:
    name: str
    computations: list[Computation]
    header_extra: str = ""  # ", replica_count=2" ...
    percent: bool = True  # print names with '%' (newer printers) or without (jaxlib 0.4.x)

    @property
    def entry(self) -> Computation:
        return next((c for c in self.computations if c.entry), self.computations[-1])

    def computation(self, name: str) -> Computation | None:
        return next((c for c in self.computations if c.name == name), None)

    def reachable(self) -> list[Computation]:
        """Computations the entry reaches (callees first, as printers order them)."""
        seen: set[str] = set()
        order: list[Computation] = []

        def visit(comp: Computation) -> None:
            if comp.name in seen:
                return
            seen.add(comp.name)
            for inst in comp.instructions:
                for callee in inst.called:
                    if (found := self.computation(callee)) is not None:
                        visit(found)
            order.append(comp)

        visit(self.entry)
        return order

    def instruction_count(self) -> int:
        """Instructions in every computation the entry reaches, parameters included."""
        return sum(len(c.instructions) for c in self.reachable())


def _scan_balanced(text: str, start: int, open_char: str, close_char: str) -> int:
    """Index just past the bracket closing the one at `start` (quotes and nesting respected)."""
    from xlatools.run.hlo_canon import closing_bracket

    end = closing_bracket(text, start)
    if end is None:
        raise HloSyntaxError(f"unbalanced {open_char}{close_char} in: {text[:200]}")
    return end


def split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets and quotes."""
    parts, depth, quoted, escaped, current = [], 0, False, False, []
    for char in text:
        if escaped:  # the character after a backslash in a string, as closing_bracket reads it
            escaped = False
        elif quoted:
            escaped, quoted = char == "\\", char != '"'
        elif char == '"':
            quoted = True
        elif char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _split_metadata(attributes: str) -> tuple[str, str]:
    marker = attributes.find("metadata={")
    if marker == -1:
        return attributes, ""
    end = _scan_balanced(attributes, marker + len("metadata="), "{", "}")
    before = attributes[:marker].rstrip()
    before = before[:-1] if before.endswith(",") else before
    return before + attributes[end:], attributes[marker:end]


def parse_instruction(line: str) -> Instruction:
    match = _INSTRUCTION.match(line)
    if not match:
        raise HloSyntaxError(f"not an instruction: {line.strip()[:200]}")
    rest = match["rest"]
    if rest.startswith("("):
        shape_end = _scan_balanced(rest, 0, "(", ")")
    else:
        shape_end = len(rest.split(" ", 1)[0])
    shape = rest[:shape_end].strip()
    opcode = _OPCODE.match(rest, shape_end)
    if not opcode:
        raise HloSyntaxError(f"no opcode after the shape in: {line.strip()[:200]}")
    open_at = opcode.end() - 1
    close_at = _scan_balanced(rest, open_at, "(", ")")
    inside = rest[open_at + 1:close_at - 1]
    attributes, metadata = _split_metadata(rest[close_at:])
    op = opcode["opcode"]
    operands = [] if op in LITERAL_OPCODES else [part.split()[-1].lstrip("%") for part in split_top_level(inside)]
    return Instruction(match["name"], shape, op, operands, inside if op in LITERAL_OPCODES else "",
                       attributes.rstrip(), metadata, bool(match["root"]))


def parse_module(text: str) -> Module:
    """Module of HLO text (one module; raises HloSyntaxError naming the line)."""
    name, extra, percent = "", "", False
    computations: list[Computation] = []
    current: Computation | None = None
    in_table = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            in_table = False
            continue
        if stripped.startswith("HloModule"):
            head = stripped[len("HloModule"):].strip()
            name = re.split(r"[\s,]", head, maxsplit=1)[0]
            extra = "".join(f", {m}" for m in _HEADER_KEEP.findall(head))
            continue
        if stripped in _TABLE_HEADERS:
            in_table = True
            continue
        if in_table and current is None and not _COMPUTATION.match(stripped):
            continue
        in_table = False
        try:
            if current is None:
                header = _COMPUTATION.match(stripped)
                if not header:
                    raise HloSyntaxError(f"expected a computation, got: {stripped[:200]}")
                current = Computation(header["name"], [], entry=bool(header["entry"]))
                percent = percent or bool(re.match(r"^(?:ENTRY\s+)?%", stripped))
            elif stripped.startswith("}"):
                computations.append(current)
                current = None
            else:
                current.instructions.append(parse_instruction(stripped))
        except HloSyntaxError as exc:
            raise HloSyntaxError(f"line {number}: {exc}") from None
    if current is not None or not computations:
        raise HloSyntaxError("the text ends inside a computation" if current else "no computation in the text")
    if not name:
        raise HloSyntaxError("no 'HloModule NAME' line")
    return Module(name, computations, extra, percent)


def print_instruction(inst: Instruction, percent: bool, metadata: bool = True) -> str:
    mark = "%" if percent else ""
    inside = inst.payload if inst.opcode in LITERAL_OPCODES else ", ".join(f"{mark}{o}" for o in inst.operands)
    tail = inst.attributes
    if metadata and inst.metadata:
        tail += f", {inst.metadata}"
    return f"  {'ROOT ' if inst.root else ''}{mark}{inst.name} = {inst.shape} {inst.opcode}({inside}){tail}"


def print_module(module: Module, metadata: bool = True) -> str:
    """HLO text of the module's reachable computations (callees first, the entry last)."""
    mark = "%" if module.percent else ""
    lines = [f"HloModule {module.name}{module.header_extra}", ""]
    for comp in module.reachable():
        lines.append(f"{'ENTRY ' if comp.entry else ''}{mark}{comp.name} {{")
        lines += [print_instruction(inst, module.percent, metadata) for inst in comp.instructions]
        lines += ["}", ""]
    return "\n".join(lines)


@dataclass
class Users:
    """Who uses each instruction of one computation."""

    by_name: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, comp: Computation) -> "Users":
        users: dict[str, list[str]] = {i.name: [] for i in comp.instructions}
        for inst in comp.instructions:
            for operand in inst.operands:
                users.setdefault(operand, []).append(inst.name)
        return cls(users)
