"""Write .npz files without numpy (xlatools' own process has no numpy).

The .npy format: magic, version 1.0, a little header dict padded to 64 bytes, raw
C-order data. An .npz is a zip of those. Each array is written in the order of
its bytes (for a snapshot literal: its layout's major-to-minor order); the target
script (which has numpy) puts dimensions back in logical order.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

from xlatools.errors import UsageError

MAGIC = b"\x93NUMPY\x01\x00"


def npy_bytes(descr: str, shape: list[int], data: bytes) -> bytes:
    dims = "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr,
        dims.rstrip(", ") if len(shape) > 1 else dims,
    )
    total = len(MAGIC) + 2 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    return MAGIC + len(header).to_bytes(2, "little") + header.encode("latin1") + data


def strings_npy(values: list[str]) -> bytes:
    """A 1-d unicode array (numpy reads it without pickles)."""
    width = max([len(v) for v in values] + [1])
    data = b"".join(v.ljust(width, "\0").encode("utf-32-le") for v in values)
    return npy_bytes(f"<U{width}", [len(values)], data)


def write_npz(path: Path, members: dict[str, bytes]) -> None:
    """`members`: name (without .npy) -> the bytes of one .npy. Written via a temp file, then renamed."""
    import os

    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as archive:
            for name, blob in members.items():
                info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                archive.writestr(info, blob)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_npz(path: Path, option: str) -> None:
    """An .npz of plain arrays, or UsageError naming it: not a zip of .npy files, or an array of Python
    objects (loading one runs pickled code; the target loads with allow_pickle=False and would only fail)."""
    hint = "give an .npz of numeric arrays (numpy.savez), or --inputs random|zeros|ones"
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                with archive.open(info) as handle:
                    head = handle.read(10)
                    if not info.filename.endswith(".npy") or head[:8] not in (
                        MAGIC,
                        b"\x93NUMPY\x02\x00",
                        b"\x93NUMPY\x03\x00",
                    ):
                        raise UsageError(f"{option} {path}: {info.filename} is not a .npy array", hint=hint)
                    size = (
                        int.from_bytes(head[8:10], "little")
                        if head[6] == 1
                        else int.from_bytes(head[8:10] + handle.read(2), "little")
                    )
                    header = ast.literal_eval(handle.read(min(size, 1 << 16)).decode("latin1").strip())
                if not isinstance(header, dict) or "O" in str(header.get("descr")):
                    raise UsageError(f"{option} {path}: {info.filename} holds Python objects (a pickle)", hint=hint)
    except (zipfile.BadZipFile, OSError, ValueError, SyntaxError, EOFError) as exc:
        raise UsageError(f"{option} {path}: not a readable .npz ({type(exc).__name__}: {exc})", hint=hint) from None
