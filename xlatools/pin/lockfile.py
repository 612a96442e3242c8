"""The lock file's shape, as JSON has it, checked by the records reader (`records.base.validate`: one
pydantic validation for every input file, each problem with its key path) before `pin.lock` turns it
into a `Lock`. Strict where hand parsing was lax: `"urls": "https://..."` (a string, not a list) or a
number for a commit is refused with its key path instead of being read character by character.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PatchShape:
    path: str
    sha256: str


@dataclass
class ArchiveShape:
    sha256: str
    urls: list[str] | None = None
    integrity: str | None = None
    strip_prefix: str | None = None


@dataclass
class MadeForShape:
    jax_commit: str | None = None
    layout: str | None = None


@dataclass
class EntryShape:
    commit: str
    kind: str = "archive"
    repo: str | None = None
    ref: str | None = None
    urls: list[str] | None = None
    sha256: str | None = None
    integrity: str | None = None
    strip_prefix: str | None = None
    patches: list[PatchShape] | None = None
    resolved_at: str | None = None
    local_path: str | None = None
    dirty: bool = False
    other_archives: list[ArchiveShape] | None = None


@dataclass
class LockShape:
    lock_version: int
    dependencies: dict[str, EntryShape] = field(default_factory=dict)
    profile: str | None = None
    generator: str | None = None
    made_for: MadeForShape | None = None
