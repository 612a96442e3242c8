"""Repro pack archives: deterministic to write, careful to read.

Writing: entries sorted, every mtime fixed, owners and modes normalised, gzip
header without a time stamp, and a SHA256SUMS file listing every other file,
so the same contents give the same bytes on any machine.
Reading: members are checked before anything is written: no absolute paths, no
`..`, nothing but regular files and folders (links, devices and fifos are
refused), a size limit, and every file must be in SHA256SUMS with its digest.
Files are written only below the destination folder, created fresh.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from pathlib import Path, PurePosixPath

from xlatools.errors import UsageError

ROOT = "repro"
SUMS = "SHA256SUMS"
FIXED_MTIME = 315532800  # 1980-01-01, as zip and reproducible-builds tooling use
MAX_BYTES = 4 << 30


class PackError(UsageError):
    """A pack that is damaged or unsafe to unpack."""


def write_pack(files: dict[str, bytes], out: Path) -> Path:
    """`files`: path inside the pack (posix, relative) -> contents. Writes `out` atomically."""
    sums = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in sorted(files.items()))
    entries = {**files, SUMS: sums.encode()}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in sorted({str(p) for name in entries for p in PurePosixPath(name).parents if str(p) != "."}):
            tar.addfile(_info(f"{ROOT}/{directory}", tarfile.DIRTYPE, 0, 0o755))
        for name in sorted(entries):
            tar.addfile(_info(f"{ROOT}/{name}", tarfile.REGTYPE, len(entries[name]), 0o644), io.BytesIO(entries[name]))
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle, gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as gz:
            gz.write(raw.getvalue())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def _info(name: str, kind: bytes, size: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode, info.mtime = kind, size, mode, FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _member_path(member: tarfile.TarInfo, archive: Path) -> PurePosixPath:
    path = PurePosixPath(member.name)
    if member.name.startswith(("/", "\\")) or path.is_absolute() or ":" in path.parts[0]:
        raise PackError(f"{archive}: refuses absolute path {member.name!r}", hint="a pack holds relative paths only")
    if ".." in path.parts:
        raise PackError(f"{archive}: refuses path {member.name!r} (it climbs out with '..')")
    if not path.parts or path.parts[0] != ROOT:
        raise PackError(f"{archive}: {member.name!r} is outside the pack's {ROOT}/ folder", hint="not an xlatools repro pack")
    if member.issym() or member.islnk():
        raise PackError(f"{archive}: refuses link {member.name!r} -> {member.linkname!r}", hint="packs never contain links")
    if not (member.isfile() or member.isdir()):
        raise PackError(f"{archive}: refuses {member.name!r} (not a regular file or folder)")
    return PurePosixPath(*path.parts[1:])


def read_members(archive: Path) -> dict[str, bytes]:
    """Every file of the pack, checked (paths, kinds, sizes, SHA256SUMS), by path inside the pack."""
    files: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                rel = _member_path(member, archive)
                if member.isdir():
                    continue
                total += member.size
                if total > MAX_BYTES:
                    raise PackError(f"{archive}: unpacks to more than {MAX_BYTES >> 30} GiB; refused")
                if str(rel) in files:
                    raise PackError(f"{archive}: {rel} appears twice")
                files[str(rel)] = tar.extractfile(member).read()
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
        if isinstance(exc, FileNotFoundError):
            raise UsageError(f"{archive}: no such file", hint="give a .tar.gz written by `xlatools repro pack`") from None
        raise PackError(f"{archive}: not a readable pack ({exc})", hint="give a .tar.gz written by `xlatools repro pack`") from None
    _check_sums(files, archive)
    return files


def _check_sums(files: dict[str, bytes], archive: Path) -> None:
    if SUMS not in files:
        raise PackError(f"{archive}: no {SUMS} in the pack; refused")
    listed: dict[str, str] = {}
    for line in files[SUMS].decode("utf-8", "replace").splitlines():
        digest, _, name = line.partition("  ")
        if name:
            listed[name] = digest
    for name, data in files.items():
        if name == SUMS:
            continue
        if name not in listed:
            raise PackError(f"{archive}: {name} is not in {SUMS}; refused")
        if hashlib.sha256(data).hexdigest() != listed[name]:
            raise PackError(f"{archive}: {name} does not match its sha256 in {SUMS}; refused",
                            hint="the pack was changed or damaged after it was written")
    missing = sorted(set(listed) - set(files))
    if missing:
        raise PackError(f"{archive}: {SUMS} lists files the pack lacks: {', '.join(missing[:5])}")


def extract(archive: Path, dest: Path) -> Path:
    """Check the whole pack, then write it into `dest` (a new folder); returns `dest`."""
    files = read_members(archive)
    dest = Path(dest)
    dest.mkdir(parents=True)
    root = dest.resolve()
    for name, data in sorted(files.items()):
        target = (dest / name).resolve()
        if root not in target.parents:  # belt and braces: _member_path already refused such names
            raise PackError(f"{archive}: {name} would land outside {dest}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as handle:
            handle.write(data)
    return dest
