"""Repro pack archives: deterministic to write, careful to read.

Writing: entries sorted, every mtime fixed, owners and modes normalised, gzip
header without a time stamp, and a SHA256SUMS file listing every other file,
so the same contents give the same bytes on any machine.
Reading: the pack is read twice, streamed (memory stays small whatever its size).
The first reading checks everything and writes nothing: no absolute paths, no
`..`, nothing but regular files and folders (links, devices and fifos are
refused), caps on the unpacked total and the number of files, and every file in
SHA256SUMS with its digest. The second writes the files below the destination
folder, created fresh, and checks them against the first. Paths that pack.json
names resolve only to files of that verified list (`member_path`).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from xlatools.errors import UsageError
from xlatools.fsutil import write_failure, write_output

ROOT = "repro"
SUMS = "SHA256SUMS"
FIXED_MTIME = 315532800  # 1980-01-01, as zip and reproducible-builds tooling use
MAX_BYTES = 4 << 30  # unpacked; a pack holds modules, snapshots of their arguments and a program
MAX_MEMBERS = 100_000
MAX_SUMS_BYTES = 16 << 20
CHUNK = 1 << 20


class PackError(UsageError):
    """A pack that is damaged or unsafe to unpack."""


def write_pack(files: dict[str, bytes], out: Path, option: str = "-o") -> Path:
    """`files`: path inside the pack (posix, relative) -> contents. Writes `out` atomically (errors name `option`)."""
    sums = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in sorted(files.items()))
    entries = {**files, SUMS: sums.encode()}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in sorted({str(p) for name in entries for p in PurePosixPath(name).parents if str(p) != "."}):
            tar.addfile(_info(f"{ROOT}/{directory}", tarfile.DIRTYPE, 0, 0o755))
        for name in sorted(entries):
            tar.addfile(_info(f"{ROOT}/{name}", tarfile.REGTYPE, len(entries[name]), 0o644), io.BytesIO(entries[name]))
    compressed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=0) as gz:
        gz.write(raw.getvalue())
    write_output(Path(out), compressed.getvalue(), option)  # atomic; a full disk is exit 3, a bad path exit 2
    return Path(out)


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
        raise PackError(
            f"{archive}: {member.name!r} is outside the pack's {ROOT}/ folder", hint="not an xlatools repro pack"
        )
    if member.issym() or member.islnk():
        raise PackError(
            f"{archive}: refuses link {member.name!r} -> {member.linkname!r}", hint="packs never contain links"
        )
    if not (member.isfile() or member.isdir()):
        raise PackError(f"{archive}: refuses {member.name!r} (not a regular file or folder)")
    return PurePosixPath(*path.parts[1:])


@dataclass(frozen=True)
class Member:
    size: int
    sha256: str


def _pack_file(archive: Path) -> None:
    """A regular file, or bad input (a folder, a FIFO that would block, a device: never opened)."""
    try:
        info = os.stat(archive)
    except FileNotFoundError:
        raise UsageError(f"{archive}: no such file", hint="give a .tar.gz written by `xlatools repro pack`") from None
    except OSError as exc:
        raise PackError(f"{archive}: cannot read it ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise PackError(f"{archive}: not a regular file", hint="give a .tar.gz written by `xlatools repro pack`")


def _stream(archive: Path, take) -> dict[str, Member]:
    """Every file member of the pack, checked (path, kind, count, running total) before its data is read,
    its data streamed in chunks to `take(name, chunks)`; returns each file's size and sha256."""
    _pack_file(archive)
    found: dict[str, Member] = {}
    total = 0
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                rel = _member_path(member, archive)
                if member.isdir():
                    continue
                total += member.size
                if total > MAX_BYTES:
                    raise PackError(
                        f"{archive}: unpacks to more than {MAX_BYTES >> 20} MiB; refused",
                        hint="a pack holds modules and a program, not data sets",
                    )
                if len(found) >= MAX_MEMBERS:
                    raise PackError(f"{archive}: more than {MAX_MEMBERS} files; refused")
                if str(rel) in found:
                    raise PackError(f"{archive}: {rel} appears twice")
                found[str(rel)] = _take(tar, member, str(rel), take, archive)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise PackError(
            f"{archive}: not a readable pack ({exc})", hint="give a .tar.gz written by `xlatools repro pack`"
        ) from None
    return found


def _take(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str, take, archive: Path) -> Member:
    digest, seen = hashlib.sha256(), 0
    handle = tar.extractfile(member)

    def chunks():
        nonlocal seen
        while block := handle.read(CHUNK):
            seen += len(block)
            digest.update(block)
            yield block

    take(name, chunks())
    if seen != member.size:
        raise PackError(f"{archive}: {name} is cut short ({seen} of {member.size} bytes)")
    return Member(seen, digest.hexdigest())


def verify(archive: Path) -> dict[str, Member]:
    """Check the whole pack without writing anything (memory stays small whatever the members'
    size): safe paths and kinds, sizes and total within the caps, and every file listed in
    SHA256SUMS with its digest. Returns the files (SHA256SUMS included) by path inside the pack."""
    sums: list[bytes] = []

    def take(name: str, chunks) -> None:
        for block in chunks:
            if name == SUMS:
                sums.append(block)
                if sum(map(len, sums)) > MAX_SUMS_BYTES:
                    raise PackError(f"{archive}: {SUMS} is larger than any pack needs; refused")

    members = _stream(archive, take)
    _check_sums(members, b"".join(sums), archive)
    return members


def _check_sums(members: dict[str, Member], sums: bytes, archive: Path) -> None:
    if SUMS not in members:
        raise PackError(f"{archive}: no {SUMS} in the pack; refused")
    listed: dict[str, str] = {}
    for line in sums.decode("utf-8", "replace").splitlines():
        digest, _, name = line.partition("  ")
        if name:
            listed[name] = digest
    for name, member in members.items():
        if name == SUMS:
            continue
        if name not in listed:
            raise PackError(f"{archive}: {name} is not in {SUMS}; refused")
        if member.sha256 != listed[name]:
            raise PackError(
                f"{archive}: {name} does not match its sha256 in {SUMS}; refused",
                hint="the pack was changed or damaged after it was written",
            )
    missing = sorted(set(listed) - set(members))
    if missing:
        raise PackError(f"{archive}: {SUMS} lists files the pack lacks: {', '.join(missing[:5])}")


def extract(archive: Path, dest: Path, members: dict[str, Member] | None = None) -> Path:
    """Check the whole pack (`verify`, unless `members` is its answer), then stream it into `dest` (a new
    folder), checking every file against the first reading again; returns `dest`. On any error `dest`
    is left for the caller to remove (it is always a fresh folder)."""
    members = verify(archive) if members is None else members
    dest = Path(dest)
    try:
        dest.mkdir(parents=True)
    except OSError as exc:
        raise write_failure(
            exc, f"cannot unpack {archive} into {dest.parent}: {exc.strerror}", hint="pick another --out"
        ) from None
    root = dest.resolve()

    def take(name: str, chunks) -> None:
        target = (dest / name).resolve()
        if root not in target.parents:  # belt and braces: _member_path already refused such names
            raise PackError(f"{archive}: {name} would land outside {dest}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as handle:
                for block in chunks:
                    handle.write(block)
        except OSError as exc:  # the destination's fault (full, read-only), not the pack's
            raise write_failure(
                exc, f"cannot unpack {archive} into {dest.parent}: {exc.strerror}", hint="pick another --out"
            ) from None

    again = _stream(archive, take)
    if again != members:  # the file changed between the two readings
        raise PackError(f"{archive}: changed while it was being unpacked; refused")
    return dest


def member_path(root: Path, members: dict[str, Member], rel: object, where: str, archive: Path) -> Path:
    """The extracted file that pack.json names at `where`: only a file of the verified member list
    (never pack.json or SHA256SUMS, never a path outside the pack), else the pack is damaged (exit 2)."""
    if not isinstance(rel, str) or rel in ("", SUMS, "pack.json") or rel not in members:
        raise PackError(
            f"{archive}: pack.json [{where}] names {rel!r}, which is not a file of the pack",
            hint="the pack is damaged or was not written by `xlatools repro pack`",
        )
    return root / rel
