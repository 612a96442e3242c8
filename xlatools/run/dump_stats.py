"""Numbers read from dump files without holding them in memory: instruction counts and
digests in one chunked read per file, and buffer-assignment totals per module."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.hlo.dump_names import DumpKind, parse_dump_name
from xlatools.hlo.grammar import INSTRUCTION_START_BYTES as _INSTRUCTION_BYTES  # anchored on a newline: fast to scan

if TYPE_CHECKING:
    from xlatools.run.dumps import DumpIndex, Module

_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileStats:
    """One pass over an HLO text file: what diff and report need, without holding the text."""

    size: int
    digest: str  # identity of the whole content (hash of the header line's hash and the body's)
    body_sha256: str  # without the `HloModule ...` header line (passes rewrite layouts there)
    instructions: int


def hlo_file_stats(path: Path) -> FileStats | None:
    """Hashes and instruction count of one HLO text file, read in 1 MiB chunks (bounded memory)."""
    header, body = hashlib.sha256(), hashlib.sha256()
    size = count = 0
    carry, first = b"", True
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                size += len(chunk)
                data = carry + chunk
                cut = data.rfind(b"\n") + 1
                lines, carry = data[:cut], data[cut:]
                if first and lines:
                    first = False
                    if lines.startswith(b"HloModule"):
                        end = lines.find(b"\n") + 1
                        header.update(lines[:end])
                        lines = lines[end:]
                body.update(lines)
                count += len(_INSTRUCTION_BYTES.findall(b"\n" + lines))
    except OSError:
        return None
    if carry:
        if first and carry.startswith(b"HloModule"):
            header.update(carry)
        else:
            body.update(carry)
            count += len(_INSTRUCTION_BYTES.findall(b"\n" + carry))
    body_hex = body.hexdigest()
    digest = hashlib.sha256(header.digest() + bytes.fromhex(body_hex)).hexdigest()
    return FileStats(size, digest, body_hex, count)


@dataclass(frozen=True)
class MemoryTotals:
    """Totals from a module's `-buffer-assignment.txt` and `-memory-usage-report.txt`."""

    allocations: int | None = None
    allocated_bytes: int | None = None  # sum of allocation sizes
    by_kind: dict[str, int] = field(default_factory=dict)  # parameter, output, temp, thread-local, constant
    report_total_bytes: int | None = None  # "Total bytes:" of the memory-usage report, all memory spaces


_ALLOCATION = re.compile(r"^allocation \d+: size (\d+), (.*)$")


def _allocation_kind(rest: str) -> str:
    for kind in ("parameter", "output", "thread-local", "constant", "temp"):
        if kind in rest:
            return kind
    return "other"


def _file_of(module: Module, kind: DumpKind) -> str | None:
    """The module's text file of `kind` (the first, by name)."""
    for file in module.files:
        name = parse_dump_name(file, module_name=module.name)
        if name is not None and name.kind is kind and name.fmt == "txt":
            return file
    return None


def memory_totals(index: DumpIndex, module: Module) -> MemoryTotals | None:
    """Buffer-assignment and memory-usage totals of `module`, read line by line; None without those files."""
    assignment = _file_of(module, DumpKind.BUFFER_ASSIGNMENT)
    report = _file_of(module, DumpKind.MEMORY_USAGE_REPORT)
    if not assignment and not report:
        return None
    count = total = None
    kinds: dict[str, int] = {}
    if assignment:
        count = total = 0
        with open(index.root / assignment, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = _ALLOCATION.match(line)
                if match:
                    size, kind = int(match[1]), _allocation_kind(match[2])
                    count, total = count + 1, total + size
                    kinds[kind] = kinds.get(kind, 0) + size
    report_total = None
    if report:
        with open(index.root / report, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Total bytes:"):
                    report_total = (report_total or 0) + int(line.split()[2])
    return MemoryTotals(count, total, kinds, report_total)
