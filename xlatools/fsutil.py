"""File-system helpers: atomic writes (temp file in the target dir, then os.replace),
file digests, and the cache root every capability keeps its caches under."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None, durable: bool = True) -> None:
    """Readers see the old file or the new one, never half. `durable` also syncs the data to disk
    first (survives a power cut); records that are rewritten moments later skip that cost."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is None and path.exists():
            mode = path.stat().st_mode & 0o7777
        os.chmod(tmp, mode if mode is not None else 0o644)
        os.replace(tmp, path)
    except BaseException:
        # Also on Ctrl-C: never leave the temp file behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: Path, text: str, mode: int | None = None, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode, durable)


def atomic_write_json(path: Path, data: Any, durable: bool = True) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n", durable=durable)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def cache_root() -> Path:
    """XLATOOLS_CACHE_DIR (with ~ expanded), else the user cache dir: target probes, archives,
    bazel caches and environments all live below it."""
    override = os.environ.get("XLATOOLS_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("xlatools"))
