"""Which line of the user's code created an HLO module, read from its before_optimizations.txt.

What jax leaves in the text dump (see tests/fixtures/hlo/):
  jaxlib 0.10+ : tables after the HloModule line (FileNames, FunctionNames, FileLocations,
                 StackFrames) and `stack_frame_id=N` in instruction metadata. The printer
                 writes each frame's parent as (parent id + 1), so a root frame reads
                 `parent_frame_id=1` and frame 1's children read 2 (checked on 0.10.2 and
                 0.12.0.1 with nested calls). A printer that writes true ids shows 0 for roots,
                 which is how the two are told apart.
  jaxlib 0.4.30: `source_file="..." source_line=N` in metadata: the op's own line only.
The creator of `jit_<fn>` is the caller of the outermost frame of `fn` (so three
`jit_stage` modules compiled from three call sites show three lines); a module with no
such frame (an eager op like `x + 1` becomes `jit_add`) gets its innermost user frame.
Library frames (jax, site-packages) are skipped where a user frame exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xlatools.hlo.grammar import TABLE_HEADERS, TABLE_ROW, LineKind, parse_instruction, scan_lines
from xlatools.hlo.values import metadata_fields

_LIBRARY = ("site-packages", "dist-packages", "/jax/", "/jaxlib/", "<frozen")


@dataclass(frozen=True)
class SourceLine:
    file: str
    line: int
    function: str | None = None  # None on jaxlib 0.4.30 (no function names in the dump)

    def short(self) -> str:
        return f"{Path(self.file).name}:{self.line}"


def scan_before(path: Path, module_name: str) -> tuple[int | None, SourceLine | None]:
    """Instruction count and creating source line of a before_optimizations.txt, in one streaming
    pass; the tables sit at the top, and the first instruction that names a frame is enough."""
    count, tables, section, frame_id, old = 0, {name: {} for name in TABLE_HEADERS}, None, None, None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for kind, line in scan_lines(handle):
                if kind is LineKind.INSTRUCTION:
                    count += 1
                    if frame_id is None and old is None:
                        frame_id, old = _first_source(line)
                elif kind is LineKind.TABLE:
                    section = line.strip()
                elif kind is LineKind.TABLE_ROW and section:
                    row = TABLE_ROW.match(line.strip())
                    if row:
                        tables[section][int(row[1])] = row[2]
                else:
                    section = None
    except OSError:
        return None, None
    if frame_id is not None:
        return count, _creator(_stack(tables, frame_id), module_name)
    return count, old


def _first_source(line: str) -> tuple[int | None, SourceLine | None]:
    """(stack frame id, old-style source line) of an instruction's metadata; (None, None) without either."""
    inst = parse_instruction(line)
    fields = inst.metadata if inst else {}
    if fields.get("stack_frame_id", "").isdigit():
        return int(fields["stack_frame_id"]), None
    if "source_file" in fields and fields.get("source_line", "").isdigit():
        return None, SourceLine(fields["source_file"], int(fields["source_line"]))
    return None, None


def _ids(text: str) -> dict[str, int]:
    return {key: int(value) for key, value in metadata_fields(text).items() if value.isdigit()}


def _stack(tables: dict[str, dict[int, str]], frame_id: int) -> list[SourceLine]:
    """The frames from the outermost caller down to `frame_id`."""
    frames_table = {k: _ids(text) for k, text in tables["StackFrames"].items()}
    offset = 0 if any(f.get("parent_frame_id") == 0 for f in frames_table.values()) else 1
    frames, seen = [], set()
    while frame_id in frames_table and frame_id not in seen:
        seen.add(frame_id)
        frame = frames_table[frame_id]
        location = _ids(tables["FileLocations"].get(frame.get("file_location_id", -1), ""))
        file = tables["FileNames"].get(location.get("file_name_id", -1), '""').strip('"')
        function = tables["FunctionNames"].get(location.get("function_name_id", -1), '""').strip('"')
        if file and "line" in location:
            frames.append(SourceLine(file, location["line"], function or None))
        frame_id = frame.get("parent_frame_id", 0) - offset
    return frames[::-1]


def _creator(frames: list[SourceLine], module_name: str) -> SourceLine | None:
    if not frames:
        return None
    traced = re.sub(r"\W", "_", re.sub(r"^(?:jit|pmap)_", "", module_name))  # jit_<fn>, pmap_<fn>
    for keep_library in (False, True):
        usable = [f for f in frames if keep_library or not any(m in f.file for m in _LIBRARY)]
        for index, frame in enumerate(frames):
            name = re.sub(r"\W", "_", (frame.function or "").rsplit(".", 1)[-1])
            if name == traced and index > 0:
                callers = [f for f in frames[:index] if f in usable]
                if callers:
                    return callers[-1]
                break
        if usable:
            return usable[-1]
    return frames[-1]
