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

from xlatools.hlo.grammar import (
    LITERAL_OPCODES,
    HloSyntaxError,
    LineKind,
    computation_header,
    module_header,
    parse_instruction_strict,
    scan_lines,
    split_top_level,
)
from xlatools.hlo.values import called_computations

__all__ = [
    "LITERAL_OPCODES",
    "Computation",
    "HloSyntaxError",
    "Instruction",
    "Module",
    "Users",
    "parse_instruction",
    "parse_module",
    "print_instruction",
    "print_module",
    "split_top_level",
]
_HEADER_KEEP = re.compile(r"(?:replica_count|num_partitions)=\d+")


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
        parts = (part.partition("=") for part in split_top_level(self.attributes))
        return called_computations({key.strip(): value for key, _, value in parts})

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


def parse_instruction(line: str) -> Instruction:
    """The reducer's record of one instruction line (HloSyntaxError when it is not one)."""
    inst = parse_instruction_strict(line)
    metadata = inst.attributes.get("metadata")
    attributes = inst.tail_without("metadata") if metadata is not None else inst.tail
    return Instruction(
        inst.name,
        inst.shape,
        inst.opcode,
        inst.operands,
        inst.payload if inst.opcode in LITERAL_OPCODES else "",
        attributes.rstrip(),
        f"metadata={metadata}" if metadata is not None else "",
        inst.is_root,
    )


def parse_module(text: str) -> Module:
    """Module of HLO text (one module; raises HloSyntaxError naming the line)."""
    name, extra, percent = "", "", False
    computations: list[Computation] = []
    current: Computation | None = None
    for number, (kind, line) in enumerate(scan_lines(text.splitlines()), 1):
        stripped = line.strip()
        if kind in (LineKind.BLANK, LineKind.COMMENT, LineKind.TABLE) or (
            kind is LineKind.TABLE_ROW and current is None
        ):
            continue
        if kind is LineKind.MODULE:
            name, head = module_header(stripped) or ("", "")
            extra = "".join(f", {m}" for m in _HEADER_KEEP.findall(head))
            continue
        try:
            if current is None:
                header = computation_header(stripped)
                if not header:
                    raise HloSyntaxError(f"expected a computation, got: {stripped[:200]}")
                current = Computation(header[0], [], entry=header[1])
                percent = percent or bool(re.match(r"^(?:ENTRY\s+)?%", stripped))
            elif kind is LineKind.END:
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
