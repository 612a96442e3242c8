"""The lock file: what each source dependency was resolved to (JSON, versioned).

Format (LOCK_VERSION 2; version 1 is read too) is documented in docs/pinning.md. Paths of
patches are stored relative to the lock file's directory when they are below it, so a lock
committed with its patches stays valid in another checkout.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from xlatools.errors import PinError
from xlatools.pin.sri import hex_to_sri, is_sha256_hex

LOCK_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 2 added other_archives and made_for; a version 1 lock is a version 2 without them
DEFAULT_LOCK_NAME = "xlatools.lock"
DEPENDENCY_ORDER = ("jax", "xla", "tensorflow")


@dataclass(frozen=True)
class PatchEntry:
    path: str  # as written in the lock (relative to the lock's directory, or absolute)
    sha256: str


@dataclass(frozen=True)
class Archive:
    """One downloadable form of a commit: its URLs, digest and top folder. The same commit has a
    different digest under GitHub's /archive/ URL and under its API tarball URL."""

    urls: tuple[str, ...]
    sha256: str
    strip_prefix: str | None

    @property
    def integrity(self) -> str:
        return hex_to_sri(self.sha256)


@dataclass(frozen=True)
class MadeFor:
    """The JAX tree a lock was resolved against (`pin resolve --source`)."""

    jax_commit: str | None  # git HEAD of the tree, when it was a git checkout
    layout: str | None


@dataclass(frozen=True)
class LockEntry:
    name: str  # jax, xla or tensorflow
    kind: str  # "archive" (downloaded, verified) or "local" (a checkout used in place)
    commit: str
    repo: str | None = None
    ref: str | None = None
    urls: tuple[str, ...] = ()
    sha256: str | None = None
    integrity: str | None = None  # SRI form of sha256, as MODULE.bazel wants it
    strip_prefix: str | None = None
    patches: tuple[PatchEntry, ...] = ()
    resolved_at: str | None = None
    local_path: str | None = None  # kind == "local": pass as --local_xla_path
    dirty: bool = False  # kind == "local": uncommitted changes when recorded (not reproducible)
    other_archives: tuple[Archive, ...] = ()  # the same commit under other URL forms (their own digests)

    @property
    def archives(self) -> tuple[Archive, ...]:
        """Every form of this commit the lock knows, the main one (urls, sha256) first."""
        if self.kind != "archive" or not self.sha256:
            return ()
        return (Archive(self.urls, self.sha256, self.strip_prefix), *self.other_archives)

    def to_json(self) -> dict[str, Any]:  # this dependency in the lock file's format (docs/pinning.md)
        data = asdict(self)
        data["urls"] = list(self.urls)
        data["patches"] = [asdict(patch) for patch in self.patches]
        data["other_archives"] = [
            {"urls": list(a.urls), "sha256": a.sha256, "integrity": a.integrity, "strip_prefix": a.strip_prefix}
            for a in self.other_archives
        ]
        if not self.other_archives:
            del data["other_archives"]
        if self.kind == "archive":
            del data["local_path"], data["dirty"]
        return data


@dataclass(frozen=True)
class Lock:
    path: Path | None
    entries: dict[str, LockEntry] = field(default_factory=dict)
    profile: str | None = None
    generator: str | None = None
    made_for: MadeFor | None = None

    @property
    def jax_commit(self) -> str | None:
        """The JAX commit this lock is meant for: the pinned `jax` entry, else the tree it was made against."""
        if self.jax is not None:
            return self.jax.commit
        return self.made_for.jax_commit if self.made_for else None

    def get(self, name: str) -> LockEntry | None:
        return self.entries.get(name)

    @property
    def xla(self) -> LockEntry | None:
        return self.entries.get("xla")

    @property
    def tensorflow(self) -> LockEntry | None:
        return self.entries.get("tensorflow")

    @property
    def jax(self) -> LockEntry | None:
        return self.entries.get("jax")

    def with_entry(self, entry: LockEntry) -> "Lock":
        return replace(self, entries={**self.entries, entry.name: entry})

    def patch_file(self, patch: PatchEntry) -> Path:
        """Where a patch named in the lock lives on disk."""
        path = Path(patch.path)
        if path.is_absolute() or self.path is None:
            return path
        return self.path.parent / path

    def to_json(self) -> dict[str, Any]:  # the lock file's format (docs/pinning.md), as written
        from xlatools import __version__

        ordered = sorted(self.entries, key=lambda n: (DEPENDENCY_ORDER + (n,)).index(n))
        return {
            "lock_version": LOCK_VERSION,
            "generator": f"xlatools {__version__}",
            "profile": self.profile,
            "made_for": asdict(self.made_for) if self.made_for else None,
            "dependencies": {name: self.entries[name].to_json() for name in ordered},
        }

    def render(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"


def load_lock(path: Path) -> Lock:
    from xlatools.errors import UsageError
    from xlatools.records.base import read_json_object

    path = Path(path)
    regenerate = "the lock is written by `xlatools pin resolve`; regenerate it"
    if not os.path.lexists(path):
        raise PinError(
            f"lock file {path} does not exist",
            hint="create it with `xlatools pin resolve --profile P` (or `pin local`), or pass --lock",
        )
    try:  # the records reader's JSON: a regular file, bounded, UTF-8, an object
        data = read_json_object(path, "lock file", hint=regenerate)
    except UsageError as exc:
        raise PinError(exc.message, hint=exc.hint) from None
    return parse_lock(data, path)


def parse_lock(data, path: Path | None) -> Lock:
    """A lock file's JSON as a Lock: its shape checked by the records reader (pin.lockfile), then each
    entry's consistency (entry_problems). Every problem is a PinError naming the file and key."""
    from xlatools.errors import UsageError
    from xlatools.pin.lockfile import LockShape
    from xlatools.records.base import validate

    where = str(path) if path else "lock"
    if not isinstance(data, dict) or not isinstance(data.get("dependencies"), dict):
        raise PinError(f"{where}: not an xlatools lock file (no `dependencies` mapping)")
    version = data.get("lock_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise PinError(
            f"{where}: lock_version {version!r} is not supported "
            f"(this xlatools reads {', '.join(map(str, READABLE_VERSIONS))})",
            hint="regenerate it with `xlatools pin resolve`, or use the xlatools version that wrote it",
        )
    try:
        shape = validate(
            data, LockShape, Path(where), "lock file", hint="regenerate the lock with `xlatools pin resolve`"
        )
    except UsageError as exc:
        raise PinError(exc.message, hint=exc.hint, problems=exc.problems) from None
    entries = {name: _entry(name, raw, where) for name, raw in shape.dependencies.items()}
    made = MadeFor(shape.made_for.jax_commit, shape.made_for.layout) if shape.made_for else None
    return Lock(path, entries, shape.profile, shape.generator, made)


def _entry(name: str, raw, where: str) -> LockEntry:
    patches = tuple(PatchEntry(p.path, p.sha256) for p in raw.patches or [])
    others = tuple(Archive(tuple(a.urls or ()), a.sha256, a.strip_prefix) for a in raw.other_archives or [])
    entry = LockEntry(
        name=name,
        kind=raw.kind,
        commit=raw.commit,
        repo=raw.repo,
        ref=raw.ref,
        urls=tuple(raw.urls or ()),
        sha256=raw.sha256,
        integrity=raw.integrity,
        strip_prefix=raw.strip_prefix,
        patches=patches,
        resolved_at=raw.resolved_at,
        local_path=raw.local_path,
        dirty=raw.dirty,
        other_archives=others,
    )
    declared = [a.integrity for a in raw.other_archives or []]
    problems = entry_problems(entry)
    problems += [
        f"other_archives: integrity {sri!r} does not match sha256 {a.sha256}"
        for a, sri in zip(others, declared)
        if sri is not None and is_sha256_hex(a.sha256) and sri != a.integrity
    ]
    if problems:
        raise PinError(
            f"{where} [dependencies.{name}]: {'; '.join(problems)}",
            hint="regenerate the lock with `xlatools pin resolve`",
        )
    return entry


def entry_problems(entry: LockEntry) -> list[str]:
    """Internal consistency of one entry: kinds, digest formats, SRI == hex (pure)."""
    problems = []
    if entry.kind not in ("archive", "local"):
        problems.append(f"kind '{entry.kind}' is neither 'archive' nor 'local'")
    if len(entry.commit) != 40 or any(c not in "0123456789abcdef" for c in entry.commit):
        problems.append(f"commit '{entry.commit}' is not 40 hex digits")
    if entry.kind == "archive":
        if not entry.sha256 or not is_sha256_hex(entry.sha256):
            problems.append(f"sha256 {entry.sha256!r} is not 64 hex digits")
        elif entry.integrity != hex_to_sri(entry.sha256):
            problems.append(
                f"integrity {entry.integrity!r} does not match sha256 {entry.sha256} "
                f"(expected {hex_to_sri(entry.sha256)})"
            )
        if not entry.urls:
            problems.append("no urls")
        for other in entry.other_archives:
            if not is_sha256_hex(other.sha256):
                problems.append(f"other_archives: sha256 {other.sha256!r} is not 64 hex digits")
            if not other.urls:
                problems.append("other_archives: an archive without urls")
    elif not entry.local_path:
        problems.append("kind 'local' without local_path")
    for patch in entry.patches:
        if not is_sha256_hex(patch.sha256):
            problems.append(f"patch {patch.path}: sha256 {patch.sha256!r} is not 64 hex digits")
    return problems


def write_lock(lock: Lock) -> None:
    from xlatools.fsutil import write_output

    if lock.path is None:
        raise ValueError("lock has no path")
    write_output(lock.path, lock.render(), "--lock")
