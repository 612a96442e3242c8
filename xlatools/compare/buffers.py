"""The largest buffers of a compiled module: its buffer-assignment dump (`*-buffer-assignment.txt`, written
with every text dump) read value by value, each with the HLO instruction that defines it and the user's
line that made that instruction (the op's own innermost program frame; jaxlib 0.10+ keeps frames in the
stack-frame tables of the optimised text, 0.4.x writes `source_file` / `source_line` in the metadata).

    allocation 7: size 75759616, preallocated-temp:
     value: <73 multiply_real_fusion @0> (size=71303168,offset=0): f64[64,256,32,17]{3,2,1,0}
"""

from __future__ import annotations

import re
from pathlib import Path

from xlatools.compare.layers import BufferRow
from xlatools.hlo.dump_names import DumpKind, parse_dump_name
from xlatools.hlo.grammar import LineKind, instruction_name, parse_instruction, scan_lines
from xlatools.hlo.values import metadata_fields
from xlatools.run.dump_source import is_library
from xlatools.run.dumps import DumpIndex, Module

MAX_BUFFERS = 8
_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+), (.*)$")
_VALUE = re.compile(r"^\s*value: <\d+ (\S+) @(\S+)> \(size=(\d+),offset=\d+\): (\S+)")


def _kind(rest: str) -> str:
    for kind in ("parameter", "output", "thread-local", "constant", "temp"):
        if kind in rest:
            return kind
    return "other"


def assignment_file(module: Module) -> str | None:
    for rel in module.files:
        name = parse_dump_name(rel, module_name=module.name)
        if name is not None and name.kind is DumpKind.BUFFER_ASSIGNMENT and name.fmt == "txt":
            return rel
    return None


def largest_values(path: Path, most: int = MAX_BUFFERS) -> list[BufferRow]:
    """The `most` largest values of a buffer assignment, largest first (read line by line)."""
    rows: list[BufferRow] = []
    allocation, kind = -1, "other"
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if (found := _ALLOCATION.match(line)) is not None:
                allocation, kind = int(found[1]), _kind(found[3])
            elif (value := _VALUE.match(line)) is not None and allocation >= 0:
                index = "" if value[2] in ("0", "{}") else f" @{value[2]}"
                rows.append(BufferRow(int(value[3]), allocation, kind, value[1] + index, value[4].split("{")[0]))
    rows.sort(key=lambda r: -r.size)
    return rows[:most]


def _tables_and_lines(path: Path, names: set[str]) -> tuple[dict[str, dict[int, str]], dict[str, str]]:
    """The stack-frame tables of an HLO text and the instruction lines of `names` (one streaming pass)."""
    tables: dict[str, dict[int, str]] = {}
    lines: dict[str, str] = {}
    section = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for kind, line in scan_lines(handle):
            if kind is LineKind.TABLE:
                section = line.strip()
                tables[section] = {}
            elif kind is LineKind.TABLE_ROW and section:
                number, _, text = line.strip().partition(" ")
                if number.isdigit():
                    tables[section][int(number)] = text
            elif kind is LineKind.INSTRUCTION:
                section = None
                name = instruction_name(line)
                if name in names and name not in lines:
                    lines[name] = line
    return tables, lines


def _numbers(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in metadata_fields(text).items() if v.isdigit()}


def _frame_line(tables: dict[str, dict[int, str]], frame_id: int) -> str | None:
    """file:line of the innermost frame of the program's own code on the stack of `frame_id`."""
    frames = {k: _numbers(v) for k, v in tables.get("StackFrames", {}).items()}
    offset = 0 if any(f.get("parent_frame_id") == 0 for f in frames.values()) else 1  # see run/dump_source.py
    seen: set[int] = set()
    first = None
    while frame_id in frames and frame_id not in seen:
        seen.add(frame_id)
        location = _numbers(tables.get("FileLocations", {}).get(frames[frame_id].get("file_location_id", -1), ""))
        file = tables.get("FileNames", {}).get(location.get("file_name_id", -1), "").strip('"')
        if file and "line" in location:
            here = f"{Path(file).name}:{location['line']}"
            first = first or here
            if not is_library(file):
                return here
        frame_id = frames[frame_id].get("parent_frame_id", 0) - offset
    return first


def describe(rows: list[BufferRow], hlo_text: Path | None) -> None:
    """Fill each row's opcode, op name and source line from the module's optimised HLO text."""
    if hlo_text is None:
        return
    names = {r.value.split(" @")[0] for r in rows}
    try:
        tables, lines = _tables_and_lines(hlo_text, names)
    except OSError:
        return
    for row in rows:
        inst = parse_instruction(lines.get(row.value.split(" @")[0], ""))
        if inst is None:
            continue
        meta = inst.metadata
        row.opcode, row.op_name = inst.opcode, meta.get("op_name")
        if meta.get("stack_frame_id", "").isdigit():
            row.source = _frame_line(tables, int(meta["stack_frame_id"]))
        elif meta.get("source_file") and meta.get("source_line", "").isdigit():
            row.source = f"{Path(meta['source_file']).name}:{meta['source_line']}"


def module_buffers(index: DumpIndex, module: Module, most: int = MAX_BUFFERS) -> list[BufferRow] | None:
    """The largest buffers of a dumped module with their instructions; None without a buffer-assignment dump."""
    rel = assignment_file(module)
    if rel is None:
        return None
    try:
        rows = largest_values(index.root / rel, most)
    except OSError:
        return None
    describe(rows, index.root / module.after_file if module.after_file else None)
    return rows
