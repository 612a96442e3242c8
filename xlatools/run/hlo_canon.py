"""Canonical HLO text and its fingerprint: the same computation gives the same text on any
machine and in any run, whatever names, ids, metadata and source locations it was printed with.

Used wherever two modules are compared: replay results, bundle diffs, bisection steps.
Handles both printer styles seen in dumps: jaxlib 0.4.x (`add.15 = f32[] add(Arg_0.13, ...)`,
`ENTRY main.23 {`) and newer ones (`%add.1 = ...(%x.1, ...)`, a signature with parameter names,
and FileNames/FunctionNames/FileLocations/StackFrames tables before the computations).

JSON inside `backend_config` is written with its keys sorted (GPU compilers print its maps in no
fixed order). What is dropped: the module name, `metadata={...}` (op names, source files and lines,
stack frame ids), the stack-frame tables, `} // name` trailers, `/*index=N*/` tuple comments,
computation signatures (their parameter instructions carry the same shapes; 0.4.x prints none)
and the process pointers jaxlib 0.4.x passes to host callbacks. What is renamed:
every computation (c0, c1, ...) and every instruction (v0, v1, ...), numbered in order of
definition. Everything else (opcodes, shapes, layouts, attributes) is kept, so the same
program gives the same fingerprint on jaxlib 0.4.30 and 0.12.
"""

from __future__ import annotations

import hashlib
import re

from xlatools.hlo.grammar import (
    INDEX_COMMENT,
    INSTRUCTION_START,
    LineKind,
    attribute,
    computation_header,
    drop_attribute,
    instruction_name,
    parse_instruction,
    remove_attribute,
    scan_lines,
    set_attribute,
)
from xlatools.hlo.values import STRING, backend_config

# A quoted string (kept whole), or a name optionally prefixed with '%'.
_TOKEN = re.compile(STRING + r"|%?[A-Za-z_][\w.\-]*")


def _body_lines(text: str, sorted_json: bool = True) -> list[str]:
    """The module's lines without stack-frame tables, metadata, trailers and blank lines."""
    lines = []
    for kind, raw in scan_lines(text.splitlines()):
        line = raw.rstrip()
        if kind in (LineKind.TABLE, LineKind.TABLE_ROW, LineKind.BLANK):
            continue
        if kind is LineKind.END:
            line = "}"  # `} // main.23`
        elif kind is LineKind.INSTRUCTION:
            line = remove_attribute(line, "metadata")
            line = _sorted_backend_config(line) if sorted_json else line
        # `/*index=5*/` marks long tuples; its '=' would also hide a computation's signature.
        lines.append(INDEX_COMMENT.sub("", line))
    return _neutral_callbacks(lines)


def _sorted_backend_config(line: str) -> str:
    """`backend_config={JSON}` with its keys in sorted order at every depth; any other value as it is."""
    import json

    if "backend_config={" not in line and 'backend_config="{' not in line:
        return line
    value = attribute(line, "backend_config")
    if value is None:
        return line
    parsed = backend_config(value)
    if not isinstance(parsed, dict):
        return line
    text = json.dumps(parsed, sort_keys=True, separators=(",", ":"))
    return set_attribute(line, "backend_config", text if value.lstrip().startswith("{") else json.dumps(text))


# What autotuning chooses (FIELD_NOTES §10): a kernel's configuration, and for a fusion even its kind.
AUTOTUNED_ATTRIBUTES = ("backend_config",)


def without_autotuning(line: str) -> str:
    """One canonical line with what GPU autotuning chooses left out (backend_config, a fusion's kind)."""
    if line.startswith("HloModule"):  # frontend_attributes={fingerprint_before_lhs="..."}: a hash of the tuned module
        head, _, attributes = line.partition(",")
        return head + drop_attribute("," + attributes, "frontend_attributes")
    inst = parse_instruction(line)
    if inst is None:
        return line
    for key in AUTOTUNED_ATTRIBUTES:
        line = remove_attribute(line, key)
    return remove_attribute(line, "kind") if inst.opcode == "fusion" else line


def kernel_neutral_fingerprint(text: str) -> str:
    """The fingerprint of the module with what autotuning chooses left out (every backend_config, a
    fusion's kind): equal for two compiles whose only difference is the kernels' configuration."""
    lines = [without_autotuning(line) for line in canonical_hlo(text).splitlines()]
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


_CALLBACK_TARGET = re.compile(r'"xla_python_\w+_callback"')
_NUMBER_STRING = re.compile(r'"-?\d+"')


def _callback_descriptor(line: str) -> str | None:
    """The first operand of a host-callback custom call (jaxlib 0.4.x: a pointer constant)."""
    inst = parse_instruction(line) if "_callback" in line else None
    if inst is None or inst.opcode != "custom-call" or not inst.operands:
        return None
    return inst.operands[0] if _CALLBACK_TARGET.fullmatch(inst.attributes.get("custom_call_target", "")) else None


def _neutral_callbacks(lines: list[str]) -> list[str]:
    """jaxlib 0.4.x passes a host callback's descriptor, a pointer into the process, as the constant first operand
    of its custom call: another value in every run. It says nothing about the computation."""
    calls = {index: found for index, line in enumerate(lines) if (found := _callback_descriptor(line))}
    if not calls:
        return lines
    descriptors = set(calls.values())
    out = []
    for index, line in enumerate(lines):
        if instruction_name(line) in descriptors:
            line = re.sub(r"constant\(-?\d+\)", "constant(<python callback>)", line)
        elif index in calls and _NUMBER_STRING.fullmatch(_backend_config(line)):
            line = set_attribute(line, "backend_config", '"<python callback>"')  # the same pointer again
        out.append(line)
    return out


def _backend_config(line: str) -> str:
    inst = parse_instruction(line)
    return inst.attributes.get("backend_config", "") if inst else ""


def _names(lines: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Computation and instruction names -> canonical names, numbered in order of definition.

    Two namespaces: XLA lets a computation and an instruction share a name (`add`)."""
    computations: dict[str, str] = {}
    values: dict[str, str] = {}
    for line in lines:
        if line.startswith("HloModule"):
            continue
        header = computation_header(line)
        if header:
            computations.setdefault(header[0], f"c{len(computations)}")
            continue
        name = instruction_name(line)
        if name:
            values.setdefault(name, f"v{len(values)}")
    return computations, values


def _is_computation_reference(line: str, start: int) -> bool:
    """`to_apply=NAME`, `calls=NAME`, `branch_computations={A, B}`: an attribute value, not an operand."""
    before = line[:start].rstrip()
    if before.endswith("="):
        return not INSTRUCTION_START.fullmatch(before)  # not the instruction's own `NAME =`
    opened = before.rfind("{")
    return opened != -1 and before.rfind("}") < opened and before[:opened].endswith("computations=")


def canonical_hlo(text: str, sorted_json: bool = True) -> str:
    """The canonical form of one HLO module's text (see the module docstring). `sorted_json=False`: backend_config
    JSON as printed, the canonical form of xlatools before it sorted its keys (fingerprints in older packs)."""
    lines = _body_lines(text, sorted_json)
    computations, values = _names(lines)

    def rename(match: re.Match) -> str:
        token = match.group(0)
        if token.startswith('"'):
            return token
        line, start, end = match.string, match.start(), match.end()
        # An opcode is followed directly by '(' (`add(`); a defined name never is.
        if end < len(line) and line[end] == "(":
            return token
        bare = token.lstrip("%")
        first, second = (computations, values) if _is_computation_reference(line, start) else (values, computations)
        return first.get(bare) or second.get(bare) or token

    out = []
    for line in lines:
        header = computation_header(line)
        if line.startswith("HloModule"):
            _, _, attributes = line.partition(",")
            out.append("HloModule _" + ("," + attributes if attributes else ""))
        elif header:
            out.append(f"{'ENTRY ' if header[1] else ''}{computations[header[0]]} {{")
        else:
            out.append(_TOKEN.sub(rename, line))
    return "\n".join(out) + "\n"


def fingerprint(text: str, sorted_json: bool = True) -> str:
    """sha256 (hex) of the canonical text: equal for the same computation, on any machine."""
    return hashlib.sha256(canonical_hlo(text, sorted_json).encode()).hexdigest()
