"""Open one side of a comparison: a bundle (manifest.json + xla_dump/) or a bare dump folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlatools.errors import UsageError
from xlatools.run.dumps import DumpIndex, index_dump


@dataclass
class Side:
    label: str
    path: Path
    bundle: Path | None  # the bundle folder, None for a bare dump folder
    manifest: dict[str, Any] | None
    index: DumpIndex | None  # None: a bundle without dumps (run level only)
    process: str | None = None  # a multi-process run: "process 0 of 2" (whose dump this side reads)

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
    return data


def open_side(path: Path, label: str, process: int | None = None) -> Side:
    """A run/replay/bisect-step bundle (or its `latest` link) or an XLA dump folder; of a multi-process
    run, one process's dump (`process`, default 0; or the path `BUNDLE/xla_dump/pN`)."""
    from xlatools.run.process_dumps import choose_dump

    path = Path(path).expanduser()
    if path.is_dir() and (path / "manifest.json").is_file() and not (path / "xla_dump").is_dir():
        if process is not None:
            choose_dump(path, process)  # says that this bundle has no per-process dumps
        bundle = path.resolve()
        return Side(label, path, bundle, read_manifest(bundle), None)
    choice = choose_dump(path, process)  # raises a UsageError naming the problem
    bundle = choice.bundle.resolve() if choice.bundle is not None else None
    manifest = read_manifest(bundle) if bundle is not None else None
    return Side(label, path, bundle, manifest, index_dump(choice.root), choice.note and f"process {choice.process} "
                f"of {choice.processes}")
