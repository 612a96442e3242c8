"""Write .npz files without numpy (xlatools' own process has no numpy).

The .npy format: magic, version 1.0, a little header dict padded to 64 bytes, raw
C-order data. An .npz is a zip of those. Each array is written in the order of
its bytes (for a snapshot literal: its layout's major-to-minor order); the target
script (which has numpy) puts dimensions back in logical order.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

MAGIC = b"\x93NUMPY\x01\x00"


def npy_bytes(descr: str, shape: list[int], data: bytes) -> bytes:
    dims = "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims.rstrip(", ") if len(shape) > 1 else dims)
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
