"""Hostile contents: records of the wrong shape (JSON), YAML that attacks its loader, and pack archives."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

from .core import Run

DEEP = 100_000


def _wrong_types(original: bytes) -> bytes:
    """Every top-level value replaced by a value of another type."""
    data = json.loads(original)
    if not isinstance(data, dict):
        return b"{}"
    flip = {dict: [1, 2], list: "x", str: 12345, int: "12345", float: [], bool: {"a": 1}, type(None): {"a": 1}}
    return json.dumps({k: flip[type(v)] for k, v in data.items()}).encode()


def _nulls(original: bytes) -> bytes:
    data = json.loads(original)
    return json.dumps({k: None for k in data} if isinstance(data, dict) else None).encode()


def _nested_wrong(original: bytes) -> bytes:
    """One level down: every value inside a top-level mapping (or list of mappings) replaced by a list."""
    data = json.loads(original)
    if not isinstance(data, dict):
        return b"{}"
    for key, value in data.items():
        if isinstance(value, dict):
            data[key] = {k: [[]] for k in value}
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            data[key] = [{k: [[]] for k in item} if isinstance(item, dict) else [] for item in value]
    return json.dumps(data).encode()


# name -> contents made from the original file's bytes (None: not a file; handled by `spoil`)
JSON_SHAPES = {
    "truncated": lambda o: o[: len(o) // 2],
    "empty": lambda o: b"",
    "list": lambda o: b"[]",
    "null": lambda o: b"null",
    "string": lambda o: b'"hello"',
    "number": lambda o: b"42",
    "deep-list": lambda o: b"[" * DEEP + b"]" * DEEP,
    "deep-object": lambda o: b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "not-utf8": lambda o: b"\xff\xfe\x00{" + o[:100],
    "wrong-types": _wrong_types,
    "nulls": _nulls,
    "nested-wrong": _nested_wrong,
    "foreign": lambda o: b'{"hello": "world"}',
    "nan": lambda o: b'{"status": NaN, "schema_version": Infinity, "files": -Infinity}',
    "dir": None,
    "fifo": None,
    "symlink-loop": None,
}


def spoil(run: Run, rel: str, shape: str) -> None:
    """Replace the file at `rel` (in the case folder) by `shape` of itself."""
    path = run.path(rel)
    original = path.read_bytes() if path.is_file() else b"{}"
    if path.exists() or path.is_symlink():
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    if shape == "dir":
        path.mkdir()
        (path / "x").write_text("x")
    elif shape == "fifo":
        os.mkfifo(path)
    elif shape == "symlink-loop":
        os.symlink(path.name, path)
    else:
        path.write_bytes(JSON_SHAPES[shape](original))


def alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\ndescription: *a{levels - 1}\n"


YAML_SHAPES: dict[str, bytes | None] = {
    "alias-bomb": alias_bomb().encode(),
    "python-name": b"description: !!python/name:os.system\n",
    "python-apply": b"description: !!python/object/apply:os.system ['touch pwned']\n",
    "python-new": b"description: !!python/object/new:os.system ['touch pwned']\n",
    "unknown-tag": b"description: !custom hello\n",
    "deep-seq": b"description: " + b"[" * 50_000 + b"]" * 50_000 + b"\n",
    "deep-map": b"description: " + b"{a: " * 50_000 + b"1" + b"}" * 50_000 + b"\n",
    "not-utf8": b"description: \xff\xfe caf\xe9\n",
    "binary": bytes(range(256)) * 4,
    "top-list": b"- a\n- b\n",
    "top-scalar": b"just a string\n",
    "duplicate-keys": b"description: one\ndescription: two\n",
    "merge-alias": b"base: &b {description: x}\n<<: *b\n",
    "dir": None,
    "fifo": None,
}


def put_yaml(run: Run, rel: str, shape: str) -> None:
    path = run.path(rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    if shape == "dir":
        path.mkdir()
    elif shape == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(YAML_SHAPES[shape])


# ------------------------------------------------------------------ packs


def pack_members(pack: str) -> dict[str, bytes]:
    """The files of a real pack, by path below repro/ (SHA256SUMS left out: `write_pack` makes it)."""
    files = {}
    with tarfile.open(pack, "r:gz") as tar:
        for member in tar:
            if member.isfile():
                files[member.name.split("/", 1)[1]] = tar.extractfile(member).read()
    files.pop("SHA256SUMS", None)
    return files


def sums(files: dict[str, bytes]) -> bytes:
    return "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in sorted(files.items())).encode()


def write_pack(
    path: Path,
    files: dict[str, bytes],
    extra: list[tuple[tarfile.TarInfo, bytes | None]] = (),
    with_sums: bool = True,
    sums_text: bytes | None = None,
    root: str = "repro",
) -> Path:
    """A pack as xlatools writes it (or spoiled: extra members, other sums), gzipped."""
    entries = dict(files)
    if with_sums:
        entries["SHA256SUMS"] = sums_text if sums_text is not None else sums(files)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(entries.items()):
            info = tarfile.TarInfo(f"{root}/{name}" if root else name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(raw.getvalue(), mtime=0))
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = kind, size, link, 0o644
    return info


class _Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def zero_bomb(path: Path, files: dict[str, bytes], size: int = 1 << 30) -> Path:
    """A pack whose extra member is `size` zero bytes (about 1 MB compressed) with a wrong digest."""
    if path.exists():
        return path
    listed = {**files, "modules/zeros.bin": b"not the zeros"}
    tmp = path.with_suffix(".part")
    with (
        gzip.open(tmp, "wb", compresslevel=1) as gz,
        tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name, data in sorted({**files, "SHA256SUMS": sums(listed)}.items()):
            info = member(f"repro/{name}", size=len(data))
            tar.addfile(info, io.BytesIO(data))
        tar.addfile(member("repro/modules/zeros.bin", size=size), io.BufferedReader(_Zeros(size), 1 << 20))
    os.replace(tmp, path)
    return path
