"""From a bundle made from a run (a replay, a pack's replay, a reduction) back to that run.

Commands that need a run's record (`inspect`, `repro pack`, `replay`) take such a
bundle too: its manifest records the (resolved) source it was made from, and the run bundle is
the folder holding that source (the bundle itself, or a file or dump folder inside it). The
command says which run it uses, so nothing is followed silently."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.base import MANIFEST

FOLLOWED_KINDS = ("replay", "reduce")  # bundles made from a run's dump; they record it as `source`
RUN_LIKE = ("run", "debug")


@dataclass(frozen=True)
class Followed:
    path: Path  # what the command reads: the run bundle, or the path it was given
    note: str | None = None  # what was followed, to say before the work starts


def _kind_and_source(bundle: Path) -> tuple[str | None, str | None]:
    from xlatools.fsutil import read_cache_json

    # never a FIFO opened, a size cap, {} for anything damaged: read_bundle reports that where the command reads it
    data = read_cache_json(bundle / MANIFEST)
    if not data:
        return None, None
    source = data.get("source")
    return data.get("kind"), source if isinstance(source, str) else None


def _run_holding(source: Path) -> Path | None:
    """The run (or debug) bundle that holds `source`: itself or a folder above it, at most 4 up."""
    for folder in [source, *list(source.parents)[:4]]:
        if os.path.lexists(folder / MANIFEST) and _kind_and_source(folder)[0] in RUN_LIKE:
            return folder
    return None


def enclosing_bundle(folder: Path, levels: int = 6) -> Path | None:
    """The xlatools bundle `folder` lies in (itself or a folder above it, at most `levels` up), or None."""
    folder = Path(os.path.abspath(folder))
    for candidate in [folder, *list(folder.parents)[:levels]]:
        if os.path.lexists(candidate / MANIFEST) and _kind_and_source(candidate)[0] is not None:
            return candidate
    return None


def follow_to_run(path: Path) -> Followed:
    """`path` itself unless it is a replay or reduce bundle; then the run bundle it was made from, with a note.

    A replay/reduce bundle whose source is no run here (a single file, a dump folder, a bundle that is gone,
    or itself: an old manifest that recorded `latest`) is bad input naming what it records."""
    path = Path(path).expanduser()
    if not path.is_dir() or not os.path.lexists(path / MANIFEST):
        return Followed(path)
    kind, source = _kind_and_source(path)
    if kind not in FOLLOWED_KINDS:
        return Followed(path)
    here = Path(os.path.realpath(path))
    found = _run_holding(Path(os.path.realpath(source))) if source else None
    if found is None or Path(os.path.realpath(found)) == here:
        raise UsageError(
            f"{path}: a {kind} bundle, made from {source or 'an unrecorded source'}, which is no run bundle here",
            hint="give the run bundle itself (artifacts/latest points at the newest run; "
            f"artifacts/latest-{kind} at the newest {kind})",
        )
    return Followed(found, f"{path} is a {kind} bundle; using the run it was made from: {found}")
