"""Open one side of a comparison: a bundle (manifest.json + xla_dump/) or a bare dump folder."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xlatools.records.base import MANIFEST, BundleRecord
from xlatools.run.dumps import DumpIndex, index_dump, resolve_dump_dir


@dataclass
class Side:
    label: str
    path: Path
    bundle: Path | None  # the bundle folder, None for a bare dump folder
    manifest: BundleRecord | None  # a RunManifest, ReplayManifest, ...; None for a bare dump folder
    index: DumpIndex | None  # None: a bundle without dumps (run level only)

    @property
    def kind(self) -> str:
        if self.manifest is None:
            return "dump"
        return str(self.manifest.kind or "bundle")


def read_manifest(bundle: Path) -> BundleRecord:
    """The bundle's manifest through the one reader: a damaged or foreign one is bad input (exit 2)."""
    from xlatools.records import read_bundle

    return read_bundle(bundle)


def open_side(path: Path, label: str) -> Side:
    """A run/replay/bisect-step bundle (or its `latest` link) or an XLA dump folder."""
    path = Path(path).expanduser()
    if path.is_dir() and os.path.lexists(path / MANIFEST):  # a manifest that is not a file is named as such
        bundle = path.resolve()
        manifest = read_manifest(bundle)
        dump = bundle / "xla_dump"
        index = index_dump(dump) if dump.is_dir() else None
        return Side(label, path, bundle, manifest, index)
    root = resolve_dump_dir(path)  # raises a UsageError naming the problem
    return Side(label, path, None, None, index_dump(root))
