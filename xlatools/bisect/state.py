"""The bisect folder and its state file (`bisect.json`), written atomically after every step.

The folder name is derived from what was asked (kind, ends, test, options: the
`spec`), so re-running the same command finds the same folder and continues;
`--fresh` moves an old folder aside instead. The state file is also the result
record: candidates, every step (with its bundle), the status and the answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xlatools.bisect.engine import StepRecord
from xlatools.bundle import safe_name, utc_now
from xlatools.errors import UsageError
from xlatools.fsutil import atomic_write_json, write_failure
from xlatools.redact import redact

SCHEMA = "xlatools.bisect/1"
STATE_FILE = "bisect.json"
STATUSES = ("running", "done", "stopped", "failed", "interrupted")  # all but done resume


def spec_hash(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]


def folder_for(out_root: Path, kind: str, title: str, spec: dict[str, Any]) -> Path:
    return Path(os.path.abspath(out_root)) / f"{kind}-{safe_name(title)}-{spec_hash(spec)}"


@dataclass
class State:
    folder: Path
    kind: str
    spec: dict[str, Any]
    candidates: list[dict[str, str]]  # {"key", "label"} oldest first (releases, commits) or the pass list
    steps: list[StepRecord] = field(default_factory=list)
    status: str = "running"
    result: dict[str, Any] | None = None
    message: str | None = None
    created: str = field(default_factory=utc_now)
    notes: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.folder / STATE_FILE

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "kind": self.kind, "spec": self.spec, "spec_hash": spec_hash(self.spec),
            "created": self.created, "updated": utc_now(), "status": self.status, "message": self.message,
            "candidates": self.candidates, "notes": self.notes, "steps": [s.to_json() for s in self.steps],
            "result": self.result,
        }

    def save(self) -> None:
        try:
            atomic_write_json(self.path, redact(self.to_json()))
        except OSError as exc:
            raise write_failure(exc, f"cannot write the bisect state {self.path}: {exc.strerror}",
                                hint="free some space or pick another --out; the steps done so far are kept") from None


def load(folder: Path) -> State | None:
    """The state in `folder`, None when there is none; a corrupt file is bad input (exit 2)."""
    path = folder / STATE_FILE
    if not path.exists():
        return None
    fix = f"move it away (or run with --fresh, which keeps the old folder as {folder.name}.<time>)"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"the bisect state file {path} cannot be read: {exc}", hint=fix) from None
    try:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}, expected {SCHEMA}")
        if data["status"] not in STATUSES:
            raise ValueError(f"status {data['status']!r}")
        steps = [StepRecord.from_json(s) for s in data["steps"]]
        candidates = [{"key": str(c["key"]), "label": str(c["label"])} for c in data["candidates"]]
        return State(folder, str(data["kind"]), dict(data["spec"]), candidates, steps, data["status"],
                     data.get("result"), data.get("message"), data.get("created") or utc_now(),
                     list(data.get("notes") or []))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"the bisect state file {path} is corrupt ({type(exc).__name__}: {exc})", hint=fix) from None


def open_state(folder: Path, kind: str, spec: dict[str, Any], fresh: bool) -> State | None:
    """The existing state for this spec (None if there is none); `fresh` moves the old folder aside first."""
    if fresh and folder.exists():
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        os.replace(folder, folder.with_name(f"{folder.name}.{stamp}"))
        return None
    state = load(folder)
    if state is not None and (state.kind != kind or state.spec != spec):
        raise UsageError(f"{state.path} records another bisection ({state.kind}, {state.spec})",
                         hint="use another --out or --fresh")
    return state


def point_link(folder: Path, name: str, target: str | None) -> None:
    """`folder/name` -> target (relative when inside folder), replaced atomically; removed when target is None."""
    link = folder / name
    if target is None:
        if link.is_symlink():
            link.unlink()
        return
    rel = os.path.relpath(target, folder)
    tmp = folder / f".{name}.{os.getpid()}"
    try:
        os.symlink(rel, tmp)
        os.replace(tmp, link)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
