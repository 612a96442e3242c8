"""What xlatools remembers about a target interpreter: one JSON file per interpreter, holding
the probe's answers (per platform and frontend) and the flag verdicts. Everything is thrown
away when the interpreter or a file the answers depend on (jaxlib's or the frontend's package,
jax's version.py) changes: a reinstall or a rebuild may change any of it."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xlatools.fsutil import atomic_write_json, cache_root, read_cache_json

if TYPE_CHECKING:
    from xlatools.run.target import ProbedInterpreter

CACHE_VERSION = 4  # 4: one probe for run and doctor (targets and flags kept apart)


def stamp(path: str | None) -> int | None:
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


@dataclass
class TargetCache:
    """The answers known for `python`; `targets` by probe key, `flags` by flag-table key (flag name -> accepted)."""

    python: str
    targets: dict[str, ProbedInterpreter] = field(default_factory=dict)
    flags: dict[str, dict[str, bool]] = field(default_factory=dict)
    stamps: dict[str, int | None] = field(default_factory=dict)  # file -> its mtime when the answers were made

    @property
    def path(self):
        # A short name per interpreter; the file also holds the interpreter's path, which load()
        # checks, so two paths with one name only take turns (crc32: hashlib costs a run's start ~2 ms).
        return cache_root() / "targets" / f"{zlib.crc32(self.python.encode()):08x}.json"

    @classmethod
    def load(cls, python: str) -> "TargetCache":
        """The cache of `python`; empty when missing, unreadable, of another version, or stale."""
        from xlatools.run.target import ProbedInterpreter

        cache = cls(python)
        data = read_cache_json(cache.path)  # {} when missing or damaged (a FIFO is never opened)
        if data.get("cache_version") != CACHE_VERSION or data.get("python") != python:
            return cache
        stamps = data.get("stamps") if isinstance(data.get("stamps"), dict) else {}
        if data.get("python_stamp") != stamp(python) or any(stamp(path) != when for path, when in stamps.items()):
            return cache  # reinstalled or rebuilt: everything we knew may be wrong
        try:
            cache.targets = {key: ProbedInterpreter.from_json(value) for key, value in data.get("targets", {}).items()}
            cache.flags = {
                key: {str(name): bool(ok) for name, ok in value.items()} for key, value in data.get("flags", {}).items()
            }
        except (AttributeError, TypeError, ValueError, KeyError, RecursionError):  # damaged by hand: start afresh
            return cls(python)
        cache.stamps = stamps
        return cache

    def remember_target(self, keys: set[str], target: ProbedInterpreter) -> None:
        for key in keys:
            self.targets[key] = target
        self._save(target.stamp_files)

    def remember_flags(self, key: str, verdicts: dict[str, bool], stamp_files: list[str]) -> None:
        self.flags[key] = {**self.flags.get(key, {}), **verdicts}
        self._save(stamp_files)

    def _save(self, stamp_files: list[str]) -> None:
        from xlatools.records.base import to_json

        self.stamps.update({path: stamp(path) for path in stamp_files})
        data = {
            "cache_version": CACHE_VERSION,
            "python": self.python,
            "python_stamp": stamp(self.python),
            "stamps": self.stamps,
            "targets": to_json(self.targets),
            "flags": self.flags,
        }
        try:
            atomic_write_json(self.path, data)
        except OSError:
            pass  # a cache we cannot write only costs time
