"""Artifact bundles: one fresh directory per run or build, never reused.

Layout: `<out>/<UTC time>-<name>-<short id>/` holding `manifest.json` (written
atomically, first with status "running", then with the outcome) and whatever
the run or build produced; `<out>/latest` points at the newest finished bundle.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, get_args

from xlatools.errors import UsageError
from xlatools.fsutil import atomic_write_json, sha256_file, write_failure
from xlatools.redact import redact

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
RESERVE = ".manifest-reserve"
RESERVE_BYTES = 64 * 1024
# error: xlatools itself could not finish the run's records (disk full); the others are the run's outcome.
Status = Literal["running", "ok", "failed", "timeout", "interrupted", "error"]
STATUSES: tuple[Status, ...] = get_args(Status)
BundleKind = Literal["run", "build", "replay", "bisect"]


def safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")
    return cleaned[:60] or "bundle"


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": sys.platform,
        "machine": os.uname().machine if hasattr(os, "uname") else None,
        "cpu_count": os.cpu_count(),
    }


@dataclass
class Bundle:
    path: Path
    kind: BundleKind
    name: str
    id: str
    created: str  # ISO 8601 UTC

    @classmethod
    def create(cls, out_root: Path, name: str, kind: BundleKind) -> "Bundle":
        """Make a new, empty bundle directory; never returns an existing one."""
        out_root = Path(out_root)
        try:
            out_root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_failure(exc, f"cannot create output directory {out_root}: {exc.strerror}",
                                hint="pick another --out") from None
        now = datetime.now(timezone.utc)
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        for _ in range(20):
            short = secrets.token_hex(3)
            path = out_root / f"{stamp}-{safe_name(name)}-{short}"
            try:
                path.mkdir()  # exist_ok=False: a collision picks a new id
            except FileExistsError:
                continue
            except OSError as exc:
                raise write_failure(exc, f"cannot create a bundle in {out_root}: {exc.strerror}",
                                    hint="pick another --out") from None
            bundle = cls(path, kind, name, short, now.isoformat(timespec="seconds"))
            bundle._reserve()
            return bundle
        raise UsageError(f"could not create a fresh bundle directory under {out_root}")

    def _reserve(self) -> None:
        """Space kept for the final manifest: when the disk fills up during a run, this file is
        removed to make room for a manifest that says so. Without that much space no bundle is
        started: the folder goes again, so no bundle without a manifest is ever left."""
        try:
            with open(self.path / RESERVE, "wb") as handle:
                handle.write(b"\0" * RESERVE_BYTES)
        except OSError as exc:
            import shutil

            shutil.rmtree(self.path, ignore_errors=True)
            raise write_failure(exc, f"cannot start a bundle in {self.path.parent}: {exc.strerror}",
                                hint="pick another --out") from None

    def _point_latest(self) -> None:
        link = self.path.parent / "latest"
        tmp = self.path.parent / f".latest.{os.getpid()}.{self.id}"
        try:
            os.symlink(self.path.name, tmp)
            os.replace(tmp, link)  # atomic: readers see the old or the new target
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def write_manifest(self, data: dict[str, Any], use_reserve: bool = False) -> Path:
        """The one writer of every manifest: checks the status, always redacts secrets, writes atomically.

        A final manifest (any status but "running") points `<out>/latest` at this bundle, so
        `latest` is always the newest finished bundle. `use_reserve` frees the space kept at
        creation first (the disk is full)."""
        if data.get("status") not in STATUSES:
            raise ValueError(f"bad bundle status {data.get('status')!r}")
        if use_reserve:
            (self.path / RESERVE).unlink(missing_ok=True)
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "id": self.id,
            "created": self.created,
            **data,
        }
        # The "running" manifest is replaced at the end: only the final one is worth an fsync.
        atomic_write_json(self.path / MANIFEST, redact(manifest), durable=data["status"] != "running")
        if data["status"] != "running":
            (self.path / RESERVE).unlink(missing_ok=True)
            self._point_latest()
        return self.path / MANIFEST

    def file_index(self, exclude: tuple[str, ...] = (MANIFEST, RESERVE)) -> list[dict[str, Any]]:
        """Every file in the bundle with its size and sha256, sorted by path."""
        entries = []
        for root, dirs, files in os.walk(self.path):
            dirs.sort()
            for filename in sorted(files):
                full = Path(root) / filename
                rel = full.relative_to(self.path).as_posix()
                if rel in exclude or full.is_symlink():
                    continue
                entries.append({"path": rel, "size": full.stat().st_size, "sha256": sha256_file(full)})
        return entries

    def archive(self) -> Path:
        """Write `<bundle>.tar.gz` beside the bundle (atomically) and return its path."""
        import tarfile

        target = self.path.parent / f"{self.path.name}.tar.gz"
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(self.path, arcname=self.path.name)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return target


def utc_now(timespec: str = "milliseconds") -> str:
    """An ISO 8601 UTC time stamp ending in Z, as every record of ours writes it."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")
