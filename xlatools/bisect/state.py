"""The bisect folder and its state file (`bisect.json`), written atomically after every step.

The folder name is derived from what was asked (kind, ends, test, options: the
`spec`), so re-running the same command finds the same folder and continues;
`--fresh` moves an old folder aside instead. The state file is also the result
record: candidates, every step (with its bundle), the status and the answer
(`records.bisect.BisectState`).
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from xlatools.bundle import safe_name, utc_now
from xlatools.errors import UsageError
from xlatools.fsutil import atomic_write_json, write_failure
from xlatools.records.base import read_json_object, to_json, validate
from xlatools.records.bisect import SCHEMA, BisectSpec, BisectState
from xlatools.redact import redact

STATE_FILE = "bisect.json"


def spec_json(spec: BisectSpec) -> str:
    """The spec as canonical JSON: what identifies a bisection. The test's rule is written as the
    releases before typed records wrote it (only the values set), so their folders are found again."""
    data = to_json(spec)
    rule = data.get("test", {}).get("rule")
    if rule is not None:
        data["test"]["rule"] = {k: v for k, v in rule.items() if v not in (None, [], False)}
    return json.dumps(data, sort_keys=True)


def spec_hash(spec: BisectSpec) -> str:
    return hashlib.sha256(spec_json(spec).encode()).hexdigest()[:10]


def folder_for(out_root: Path, kind: str, title: str, spec: BisectSpec) -> Path:
    return Path(os.path.abspath(out_root)) / f"{kind}-{safe_name(title)}-{spec_hash(spec)}"


class State(BisectState):
    """A bisection under way: the state record and where it lives."""

    @property
    def path(self) -> Path:
        return Path(self.folder) / STATE_FILE

    def save(self) -> None:
        self.spec_hash = spec_hash(self.spec)
        self.created = self.created or utc_now()
        self.updated = utc_now()
        try:
            atomic_write_json(self.path, redact(to_json(self)))  # the spec is redacted already (describe)
        except OSError as exc:
            raise write_failure(
                exc,
                f"cannot write the bisect state {self.path}: {exc.strerror}",
                hint="free some space or pick another --out; the steps done so far are kept",
            ) from None


def load(folder: Path) -> State | None:
    """The state in `folder`, None when there is none; a damaged or foreign file is bad input
    (exit 2) naming the file and each key path that is wrong."""
    path = folder / STATE_FILE
    if not os.path.lexists(path):
        return None
    fix = f"move it away (or run with --fresh, which keeps the old folder as {folder.name}.<time>)"
    what = "bisect state file"
    try:
        data = read_json_object(path, what, hint=fix)
    except UsageError as exc:
        reason = exc.message.removeprefix(f"{path}: ")
        raise UsageError(f"the {what} {path} cannot be read: {reason}", hint=fix) from None
    if data.get("schema") != SCHEMA:
        raise UsageError(f"the {what} {path} is corrupt (schema {data.get('schema')!r}, expected {SCHEMA})", hint=fix)
    try:
        state = validate(data, State, path, what, hint=fix)
    except UsageError as exc:
        raise UsageError(
            f"the {what} {path} is corrupt: {exc.message.removeprefix(f'{path}: ')}", hint=fix, problems=exc.problems
        ) from None
    state.folder = folder  # where it is now (the folder may have been moved)
    return state


def set_aside(folder: Path) -> Path:
    """Move a bisect folder out of the way (kept as <folder>.<UTC time>); where it went."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    kept = folder.with_name(f"{folder.name}.{stamp}")
    n = 1
    while os.path.lexists(kept):  # twice in one second
        kept, n = folder.with_name(f"{folder.name}.{stamp}.{n}"), n + 1
    os.replace(folder, kept)
    return kept


def open_state(folder: Path, kind: str, spec: BisectSpec, fresh: bool) -> State | None:
    """The existing state for this spec (None if there is none); `fresh` moves the old folder aside first."""
    if fresh and folder.exists():
        set_aside(folder)
        return None
    state = load(folder)
    if state is not None and (state.kind != kind or spec_json(state.spec) != spec_json(spec)):
        raise UsageError(
            f"{state.path} records another bisection ({state.kind}, {spec_json(state.spec)})",
            hint="use another --out or --fresh",
        )
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
