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
The credit goes to the program's own frame: the innermost frame outside jax, site-packages and
the standard library on the way to the function (a library's `jit_fit` is credited to the
program line that called the library), with the library frame it called beside it. jax keeps only
the innermost frames of a stack (`jax_traceback_in_locations_limit`), so a deep library stack
may hold no program frame: then the first instruction whose stack reaches the program decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xlatools.hlo.grammar import TABLE_HEADERS, TABLE_ROW, LineKind, parse_instruction, scan_lines
from xlatools.hlo.values import metadata_fields

_LIBRARY = ("site-packages", "dist-packages", "/jax/", "/jaxlib/", "<frozen")
_STDLIB = re.compile(r"/lib/python\d+\.\d+/[^/]+\.py$|/lib/python\d+\.\d+/(?!site-packages/|dist-packages/)")
MAX_FRAME_IDS = 256  # distinct stacks looked at for a program frame (a module's instructions share few)


@dataclass(frozen=True)
class SourceLine:
    file: str
    line: int
    function: str | None = None  # None on jaxlib 0.4.30 (no function names in the dump)
    via: "SourceLine | None" = None  # the library frame the program's line called into, where that helps

    def short(self) -> str:
        own = f"{Path(self.file).name}:{self.line}"
        return f"{own} (via {self.via.short()})" if self.via else own


def is_library(file: str) -> bool:
    """jax, installed packages and the standard library: code that is not the program's own."""
    return any(m in file for m in _LIBRARY) or bool(_STDLIB.search(file))


def scan_before(path: Path, module_name: str) -> tuple[int | None, SourceLine | None]:
    """Instruction count and creating source line of a before_optimizations.txt, in one streaming
    pass; the tables sit at the top, and the first instruction that names a frame is enough."""
    count, tables, section, frame_ids, old = 0, {name: {} for name in TABLE_HEADERS}, None, list[int](), None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for kind, line in scan_lines(handle):
                if kind is LineKind.INSTRUCTION:
                    count += 1
                    if old is None and len(frame_ids) < MAX_FRAME_IDS:  # stacks enough to find the program's frame
                        frame_id, found_old = _first_source(line)
                        if frame_id is not None and frame_id not in frame_ids:
                            frame_ids.append(frame_id)
                        old = found_old if frame_id is None and not frame_ids else None
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
    if frame_ids:
        stacks = [_stack(tables, frame_id) for frame_id in frame_ids]
        reaching = next((s for s in stacks if any(not is_library(f.file) for f in s)), stacks[0])
        return count, _creator(reaching, module_name)
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
    """The program's frame that called the jitted function (or, for a module with no such frame, the
    innermost program frame), with the library frame it called when that is where the function lives."""
    if not frames:
        return None
    traced = re.sub(r"\W", "_", re.sub(r"^(?:jit|pmap)_", "", module_name))  # jit_<fn>, pmap_<fn>
    end = len(frames)
    for index, frame in enumerate(frames):
        name = re.sub(r"\W", "_", (frame.function or "").rsplit(".", 1)[-1])
        if name == traced and index > 0:
            end = index  # the callers of the traced function
            break
    own = [i for i in range(end) if not is_library(frames[i].file)]
    if not own:
        return frames[end - 1] if end < len(frames) else frames[-1]
    chosen = own[-1]
    nxt = chosen + 1
    in_library = end == len(frames) or is_library(frames[end].file)  # the function itself is library code
    via = frames[nxt] if in_library and nxt < len(frames) and is_library(frames[nxt].file) else None
    return SourceLine(
        frames[chosen].file,
        frames[chosen].line,
        frames[chosen].function,
        SourceLine(via.file, via.line, via.function) if via else None,
    )
