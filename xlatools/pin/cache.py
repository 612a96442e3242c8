"""Content-addressed archive cache.

    <root>/pin/sha256/<hex>          archives, named by their own sha256
    <root>/pin/index/<key>.json      which digest a pin (name, commit, urls) resolved to
    <root>/pin/tmp/                  downloads in progress (removed on error and Ctrl-C)

<root> is XLATOOLS_CACHE_DIR, else the user cache dir. A cached archive is re-hashed
when used, so a corrupted or edited cache entry is never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from xlatools.fsutil import atomic_write_json, cache_root, sha256_file


@dataclass(frozen=True)
class ArchiveCache:
    root: Path

    @classmethod
    def default(cls) -> "ArchiveCache":
        return cls(cache_root() / "pin")

    @property
    def tmp_dir(self) -> Path:
        return self.root / "tmp"

    def archive_path(self, sha256: str) -> Path:
        return self.root / "sha256" / sha256

    def lookup(self, sha256: str) -> Path | None:
        """The cached archive with this digest, if present and intact (a damaged one is dropped)."""
        path = self.archive_path(sha256)
        if not path.is_file():
            return None
        if sha256_file(path) != sha256:
            path.unlink(missing_ok=True)
            return None
        return path

    def store(self, temp_file: Path, sha256: str) -> Path:
        """Move a fully downloaded and checked file into place (same file system: atomic)."""
        final = self.archive_path(sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(temp_file, 0o444)
        os.replace(temp_file, final)
        return final

    @staticmethod
    def pin_key(name: str, commit: str, urls: list[str]) -> str:
        text = json.dumps([name, commit, urls])
        return f"{name}-{commit[:12]}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"

    def remembered_digest(self, name: str, commit: str, urls: list[str]) -> str | None:
        path = self.root / "index" / f"{self.pin_key(name, commit, urls)}.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def remember(self, name: str, commit: str, urls: list[str], sha256: str, url: str) -> None:
        path = self.root / "index" / f"{self.pin_key(name, commit, urls)}.json"
        atomic_write_json(path, {"name": name, "commit": commit, "urls": urls, "sha256": sha256, "fetched_from": url})
