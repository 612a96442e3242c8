"""The recorded outputs of two matched modules, execution by execution: XLA's snapshots
(`--preset snapshots`: the arguments and the result of every execution, on the CPU) or the recordings
xlatools makes where XLA writes none (`run --record-inputs`, a GPU: `<bundle>/recorded/`, the first
execution). The n-th execution of A is compared with the n-th of B: whether the arguments are the same
(byte for byte) and, output by output, how many elements differ and by how much (exact comparison: two
compiles of the same program on the same machine should agree to the bit).

Pure Python (no numpy in xlatools' own process): elements are read through `memoryview.cast`, so a module
past MAX_ELEMENTS or a snapshot past MAX_SNAPSHOT_BYTES is compared by digests only (said so)."""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from xlatools.compare.layers import ExecutionDelta, OutputDelta, OutputsDiff
from xlatools.hlo.dump_names import DumpKind, parse_dump_name
from xlatools.run.dumps import DumpIndex, Module

MAX_EXECUTIONS = 3  # compared per module
MAX_ELEMENTS = 4_000_000  # counted element by element per execution; beyond: digests only
MAX_SNAPSHOT_BYTES = 512 << 20
RECORDED = "recorded"  # run/recorder.py's folder, beside xla_dump/
_FORMATS = {"f2": "e", "f4": "f", "f8": "d", "c8": "f", "c16": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q"}
_FORMATS |= {"u1": "B", "u2": "H", "u4": "I", "u8": "Q", "b1": "B"}


def snapshots(index: DumpIndex, module: Module) -> tuple[str, list[Path]]:
    """("snapshots" or "recorded", the module's snapshot files in execution order)."""
    found = []
    for rel in module.files:
        name = parse_dump_name(rel, module_name=module.name)
        if name is not None and name.kind is DumpKind.SNAPSHOT:
            number = int(name.detail) if name.detail and name.detail.lstrip("-").isdigit() else 0
            found.append((number, index.root / rel))
    if found:
        return "snapshots", [path for _, path in sorted(found)]
    folder = index.root.parent / RECORDED
    if index.root.name != "xla_dump" or not folder.is_dir():
        return "snapshots", []
    stem = f"module_{module.id:04d}.{module.name}.snapshot."
    recorded = [p for p in folder.glob(f"{stem}*.pb") if p.name[len(stem) : -3].isdigit()]
    return RECORDED, sorted(recorded, key=lambda p: int(p.name[len(stem) : -3]))


def _values(array_) -> Sequence[complex] | None:
    """The elements of an hloproto.Array as Python numbers (read in place, but complex ones: made in a list)."""
    if array_.dtype == "bfloat16":
        widened = array("I", (h << 16 for h in memoryview(array_.data).cast("H")))
        return memoryview(widened.tobytes()).cast("f")
    fmt = _FORMATS.get(array_.storage[1:])
    if fmt is None or array_.dtype.startswith("float8"):
        return None
    view = cast("Sequence[float]", memoryview(array_.data).cast(fmt))  # type: ignore[call-overload]  # struct codes
    if array_.dtype.startswith("complex"):  # real and imaginary parts in turn
        return [complex(r, i) for r, i in zip(view[0::2], view[1::2])]
    return view


def _digest(arrays) -> str:
    digest = hashlib.sha256()
    for a in arrays:
        digest.update(f"{a.dtype}{a.shape}".encode())
        digest.update(a.data)
    return digest.hexdigest()


def _output(index: int, a, b) -> OutputDelta:
    elements = math.prod(a.shape)
    if (a.dtype, a.shape) != (b.dtype, b.shape):
        note = f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        return OutputDelta(index, a.dtype, list(a.shape), elements, None, note=note)
    if a.data == b.data:
        return OutputDelta(index, a.dtype, list(a.shape), elements, 0)
    values_a, values_b = _values(a), _values(b)
    if values_a is None or values_b is None or elements > MAX_ELEMENTS:
        why = "too many elements to count" if elements > MAX_ELEMENTS else f"{a.dtype}: compared by bytes"
        return OutputDelta(index, a.dtype, list(a.shape), elements, None, note=why)
    differ = nan_only = 0
    worst = 0.0
    for x, y in zip(values_a, values_b):
        if x == y or (x != x and y != y):  # equal, or NaN on both sides
            continue
        differ += 1
        if (x != x) != (y != y):
            nan_only += 1
        else:
            error = abs(x - y)
            worst = error if error > worst or error != error else worst
    return OutputDelta(index, a.dtype, list(a.shape), elements, differ, worst, nan_only)


def compare_execution(number: int, paths: tuple[Path, Path], roots: tuple[Path, Path]) -> ExecutionDelta:
    from xlatools.errors import UsageError
    from xlatools.replay.hloproto import read_snapshot

    rel = (_relative(paths[0], roots[0]), _relative(paths[1], roots[1]))
    if any(p.stat().st_size > MAX_SNAPSHOT_BYTES for p in paths):
        same = _file_digest(paths[0]) == _file_digest(paths[1])
        return ExecutionDelta(number, *rel, None, same, differ=None if not same else 0, note="large: compared by file")
    try:
        snap_a, snap_b = (read_snapshot(p) for p in paths)
    except UsageError as exc:  # a damaged snapshot: say so, compare nothing
        return ExecutionDelta(number, *rel, None, False, differ=None, note=str(exc))
    same_args = _digest(snap_a.arguments) == _digest(snap_b.arguments)
    if len(snap_a.result) != len(snap_b.result):
        note = f"{len(snap_a.result)} outputs vs {len(snap_b.result)}"
        return ExecutionDelta(number, *rel, same_args, False, differ=None, note=note)
    outputs = [_output(i, x, y) for i, (x, y) in enumerate(zip(snap_a.result, snap_b.result))]
    delta = ExecutionDelta(number, *rel, same_args, all(o.differ == 0 for o in outputs))
    delta.elements = sum(o.elements for o in outputs)
    counted = [o for o in outputs if o.differ is not None]
    delta.differ = sum(o.differ or 0 for o in counted) if len(counted) == len(outputs) else None
    errors = [o.max_abs_error for o in counted if o.max_abs_error is not None and o.differ]
    delta.max_abs_error = max(errors) if errors else None
    delta.nan_mismatches = sum(o.nan_mismatches for o in outputs)
    delta.outputs = [o for o in outputs if o.differ != 0]
    return delta


def _relative(path: Path, root: Path) -> str:
    base = root.parent if root.name == "xla_dump" else root
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def _file_digest(path: Path) -> str:
    from xlatools.fsutil import sha256_file

    return sha256_file(path)


def diff_outputs(a: tuple[DumpIndex, Module], b: tuple[DumpIndex, Module]) -> OutputsDiff | None:
    """The first MAX_EXECUTIONS executions of a module pair; None when a side recorded none."""
    (index_a, module_a), (index_b, module_b) = a, b
    source_a, files_a = snapshots(index_a, module_a)
    source_b, files_b = snapshots(index_b, module_b)
    if not files_a or not files_b:
        return None
    result = OutputsDiff(
        source_a if source_a == source_b else f"{source_a} / {source_b}", [], len(files_a), len(files_b)
    )
    if len(files_a) != len(files_b):
        result.notes.append(f"A recorded {len(files_a)} executions, B {len(files_b)}: compared in order")
    for number, pair in enumerate(zip(files_a, files_b), start=1):
        if number > MAX_EXECUTIONS:
            result.notes.append(f"the first {MAX_EXECUTIONS} executions compared")
            break
        result.executions.append(compare_execution(number, pair, (index_a.root, index_b.root)))
    return result
