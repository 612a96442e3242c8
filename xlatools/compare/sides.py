"""Open one side of a comparison: a bundle (manifest.json + xla_dump/) or a bare dump folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlatools.errors import UsageError
from xlatools.redact import redact
from xlatools.run.dumps import DumpIndex, index_dump, resolve_dump_dir


@dataclass
class Side:
    label: str
    path: Path
    bundle: Path | None  # the bundle folder, None for a bare dump folder
    manifest: dict[str, Any] | None
    index: DumpIndex | None  # None: a bundle without dumps (run level only)

    @property
    def kind(self) -> str:
        if self.manifest is None:
            return "dump"
        return str(self.manifest.get("kind") or "bundle")


def read_manifest(bundle: Path) -> dict[str, Any]:
    path = bundle / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the manifest ({exc})", hint="is this an xlatools bundle?") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the manifest is not a JSON object")
    return redact(data)  # a bundle written elsewhere (or before redaction widened) shows no secret either


def open_side(path: Path, label: str) -> Side:
    """A run/replay/bisect-step bundle (or its `latest` link) or an XLA dump folder."""
    path = Path(path).expanduser()
    if path.is_dir() and (path / "manifest.json").is_file():
        bundle = path.resolve()
        manifest = read_manifest(bundle)
        dump = bundle / "xla_dump"
        index = index_dump(dump) if dump.is_dir() else None
        return Side(label, path, bundle, manifest, index)
    root = resolve_dump_dir(path)  # raises a UsageError naming the problem
    return Side(label, path, None, None, index_dump(root))
