"""Canonical HLO text and its fingerprint: the same computation gives the same text on any
machine and in any run, whatever names, ids, metadata and source locations it was printed with.

Used wherever two modules are compared: replay results, bundle diffs, bisection steps.
Handles both printer styles seen in dumps: jaxlib 0.4.x (`add.15 = f32[] add(Arg_0.13, ...)`,
`ENTRY main.23 {`) and newer ones (`%add.1 = ...(%x.1, ...)`, a signature with parameter names,
and FileNames/FunctionNames/FileLocations/StackFrames tables before the computations).

What is dropped: the module name, `metadata={...}` (op names, source files and lines,
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

_TABLE_HEADERS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?(?P<name>[\w.\-]+)\s*(?:\(.*\)\s*->.*)?\{\s*$")
_DEFINITION = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s")
# A quoted string (kept whole), or a name optionally prefixed with '%'.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|%?[A-Za-z_][\w.\-]*')


def closing_bracket(text: str, start: int) -> int | None:
    """Index just past the bracket that closes the one at `start` (any of ({[, nested; quoted strings
    respected); None when it is never closed."""
    depth, index, quoted = 0, start, False
    while index < len(text):
        char = text[index]
        if quoted:
            if char == "\\":
                index += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def _strip_attribute(line: str, attribute: str) -> str:
    """Remove `, attribute={...}` (brackets balanced, quoted strings respected) from one line."""
    marker = f", {attribute}={{"
    while (start := line.find(marker)) != -1:
        end = closing_bracket(line, start + len(marker) - 1)
        line = line[:start] + line[end if end is not None else len(line):]
    return line


def _body_lines(text: str) -> list[str]:
    """The module's lines without stack-frame tables, metadata, trailers and blank lines."""
    lines, in_table = [], False
    for raw in text.splitlines():
        line = raw.rstrip()
        if line in _TABLE_HEADERS:
            in_table = True
            continue
        if in_table:
            if line and not line.startswith("%") and not _COMPUTATION.match(line):
                continue  # a table row ("1 {file_name_id=1 ...}", '1 "file.py"')
            in_table = False
        if not line:
            continue
        if line.startswith("}"):
            line = "}"  # `} // main.23`
        # `/*index=5*/` marks long tuples; its '=' would also hide a computation's signature from _COMPUTATION.
        lines.append(_INDEX_COMMENT.sub("", _strip_attribute(line, "metadata")))
    return _neutral_callbacks(lines)


_INDEX_COMMENT = re.compile(r"/\*index=\d+\*/")
_CALLBACK_CALL = re.compile(r'custom-call\(%?(?P<descriptor>[\w.\-]+)[,)].*custom_call_target="xla_python_\w+_callback"')


def _neutral_callbacks(lines: list[str]) -> list[str]:
    """jaxlib 0.4.x passes a host callback's descriptor, a pointer into the process, as the constant first operand
    of its custom call: another value in every run. It says nothing about the computation."""
    descriptors = {found["descriptor"] for line in lines if (found := _CALLBACK_CALL.search(line))}
    if not descriptors:
        return lines
    out = []
    for line in lines:
        definition = _DEFINITION.match(line)
        if definition and definition["name"] in descriptors:
            line = re.sub(r"constant\(-?\d+\)", "constant(<python callback>)", line)
        elif _CALLBACK_CALL.search(line):  # the same pointer again as the call's backend_config
            line = re.sub(r'backend_config="-?\d+"', 'backend_config="<python callback>"', line)
        out.append(line)
    return out


def _names(lines: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Computation and instruction names -> canonical names, numbered in order of definition.

    Two namespaces: XLA lets a computation and an instruction share a name (`add`)."""
    computations: dict[str, str] = {}
    values: dict[str, str] = {}
    for line in lines:
        if line.startswith("HloModule"):
            continue
        header = _COMPUTATION.match(line)
        if header and "=" not in line.split("{", 1)[0]:
            computations.setdefault(header["name"], f"c{len(computations)}")
            continue
        definition = _DEFINITION.match(line)
        if definition:
            values.setdefault(definition["name"], f"v{len(values)}")
    return computations, values


def _is_computation_reference(line: str, start: int) -> bool:
    """`to_apply=NAME`, `calls=NAME`, `branch_computations={A, B}`: an attribute value, not an operand."""
    before = line[:start].rstrip()
    if before.endswith("="):
        return not re.search(r"^\s*(?:ROOT\s+)?%?[\w.\-]*\s*=$", before)  # not the instruction's own `NAME =`
    opened = before.rfind("{")
    return opened != -1 and before.rfind("}") < opened and before[:opened].endswith("computations=")


def canonical_hlo(text: str) -> str:
    """The canonical form of one HLO module's text (see the module docstring)."""
    lines = _body_lines(text)
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
        header = _COMPUTATION.match(line)
        if line.startswith("HloModule"):
            _, _, attributes = line.partition(",")
            out.append("HloModule _" + ("," + attributes if attributes else ""))
        elif header and "=" not in line.split("{", 1)[0]:
            entry = "ENTRY " if line.startswith("ENTRY") else ""
            out.append(f"{entry}{computations[header['name']]} {{")
        else:
            out.append(_TOKEN.sub(rename, line))
    return "\n".join(out) + "\n"


def fingerprint(text: str) -> str:
    """sha256 (hex) of the canonical text: equal for the same computation, on any machine."""
    return hashlib.sha256(canonical_hlo(text).encode()).hexdigest()
