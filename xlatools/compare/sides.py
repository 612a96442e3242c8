"""Open one side of a comparison: a bundle (manifest.json + xla_dump/) or a bare dump folder."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xlatools.records.base import MANIFEST, BundleRecord
from xlatools.run.dumps import DumpIndex, index_dump


@dataclass
class Side:
    label: str
    path: Path
    bundle: Path | None  # the bundle folder, None for a bare dump folder
    manifest: BundleRecord | None  # a RunManifest, ReplayManifest, ...; None for a bare dump folder
    index: DumpIndex | None  # None: a bundle without dumps (run level only)
    process: str | None = None  # a multi-process run: "process 0 of 2" (whose dump this side reads)

    @property
    def kind(self) -> str:
        if self.manifest is None:
            return "dump"
        return str(self.manifest.kind or "bundle")


def read_manifest(bundle: Path) -> BundleRecord:
    """The bundle's manifest through the one reader: a damaged or foreign one is bad input (exit 2)."""
    from xlatools.records import read_bundle

    return read_bundle(bundle)


def open_side(path: Path, label: str, process: int | None = None) -> Side:
    """A run/replay/bisect-step bundle (or its `latest` link) or an XLA dump folder; of a multi-process
    run, one process's dump (`process`, default 0; or the path `BUNDLE/xla_dump/pN`)."""
    from xlatools.run.process_dumps import choose_dump

    path = Path(path).expanduser()
    manifest = None
    if path.is_dir() and os.path.lexists(path / MANIFEST):  # a manifest that is not a file is named as such
        manifest = read_manifest(path.resolve())
        if not (path / "xla_dump").is_dir():
            if process is not None:
                choose_dump(path, process)  # says that this bundle has no per-process dumps
            return Side(label, path, path.resolve(), manifest, None)
    choice = choose_dump(path, process)  # raises a UsageError naming the problem
    bundle = choice.bundle.resolve() if choice.bundle is not None else None
    if manifest is None and bundle is not None:  # BUNDLE/xla_dump/pN: its bundle's record
        manifest = read_manifest(bundle)
    which = f"process {choice.process} of {choice.processes}" if choice.process is not None else None
    return Side(label, path, bundle, manifest, index_dump(choice.root), which)
