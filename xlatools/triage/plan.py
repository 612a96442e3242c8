"""What a triage was asked (TriageRequest), where it lives, and its state file (`triage.json`).

The folder, `<out>/triage-<program>-<good>..<bad>-<spec hash>/`, comes from what identifies the
triage (ends, test, tolerances, platform), so the same command finds it again and continues;
`--skip`, `--jobs` and `--quiet` are not part of it. `--fresh` moves an old folder aside.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from xlatools.bundle import safe_name, utc_now
from xlatools.errors import UsageError
from xlatools.fsutil import atomic_write_json
from xlatools.records.base import to_json
from xlatools.records.replay import DEFAULT_TOLERANCE
from xlatools.records.triage import TRIAGE_SCHEMA, TriageSpec, TriageState
from xlatools.vocab import Platform, TriageStage

if TYPE_CHECKING:
    from xlatools.bisect.checks import TestOptions

STATE_FILE = "triage.json"
S = TypeVar("S")  # a triage state record: TriageState, PerfTriageState


@dataclass(frozen=True, kw_only=True)
class TriageRequest:
    good: str
    bad: str
    test: TestOptions  # the program (or check script) and how its exit says good or bad
    python_version: str = "3.11"
    out: Path = Path("artifacts/triage")
    skip: frozenset[TriageStage] = field(default_factory=frozenset)
    atol: float = DEFAULT_TOLERANCE
    rtol: float = DEFAULT_TOLERANCE
    jobs: int = 1  # candidates of the reduction run side by side
    fresh: bool = False
    requirements: tuple[str, ...] = ()  # the program's own packages in every release environment (--with)

    @property
    def platform(self) -> str:
        return "gpu" if self.test.platform == Platform.GPU else "cpu"


def check_request(request: TriageRequest) -> None:
    """Every value checked before anything runs or is written, whichever stages run this time: the ends
    name the triage's folder, and a stage skipped now may run with them later."""
    import math

    from xlatools.bisect.releases import check_ends, check_python_version
    from xlatools.reduce.plan import MAX_JOBS

    check_python_version(request.python_version)
    check_ends(request.good, request.bad)
    for option, value in (("--atol", request.atol), ("--rtol", request.rtol)):
        if not 0 <= value < math.inf:  # also nan: every comparison with it is false
            raise UsageError(f"{option} {value}: must be a finite number, 0 or more", hint=f"e.g. {option} 1e-3")
    if not 1 <= request.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs {request.jobs}: must be 1 to {MAX_JOBS}")


def spec_record(spec: TriageSpec) -> dict:  # the JSON form, for comparing and hashing
    """The spec as triage.json records it (redacted: the test's --env, flags and arguments may carry credentials)."""
    from xlatools.redact import redact

    return redact(to_json(spec))


def spec_hash(spec: TriageSpec) -> str:
    return hashlib.sha256(json.dumps(spec_record(spec), sort_keys=True).encode()).hexdigest()[:10]


def folder_for(out_root: Path, spec: TriageSpec) -> Path:
    program = Path(spec.test.program.split()[-1]).stem or "program"
    return Path(os.path.abspath(out_root)) / f"triage-{safe_name(program)}-{spec.good}..{spec.bad}-{spec_hash(spec)}"


def load(folder: Path) -> TriageState | None:
    """The state in `folder`, None when there is none; a damaged or foreign file is bad input (exit 2)."""
    return load_state(folder, STATE_FILE, TriageState, "triage state", TRIAGE_SCHEMA)


def save(state: TriageState) -> None:
    save_state(state, STATE_FILE)


def load_state(folder: Path, file_name: str, kind: type[S], what: str, schema: str) -> S | None:
    """A triage's state record (crash/miscompile or metric) from `folder/file_name`, None when there is none;
    a damaged file, or one of another schema, is bad input naming it (exit 2)."""
    from xlatools.records.base import read_record

    path = folder / file_name
    if not os.path.lexists(path):
        return None
    fix = f"move {folder} away, or run with --fresh (which keeps it as {folder.name}.<time>)"
    state: Any = read_record(path, kind, f"{what} file", hint=fix)
    if state.schema != schema:
        raise UsageError(f"{path}: {what} schema {state.schema!r}, this xlatools reads {schema}", hint=fix)
    state.folder = folder
    return state


def save_state(state: Any, file_name: str) -> None:
    """Write a triage's state record atomically (secrets redacted), stamped with its spec's hash and times."""
    from xlatools.redact import redact

    assert state.folder is not None
    state.spec_hash = spec_hash(state.spec)
    state.created = state.created or utc_now()
    state.updated = utc_now()
    atomic_write_json(Path(state.folder) / file_name, redact(to_json(state)))


def open_state(out_root: Path, spec: TriageSpec, fresh: bool, create: bool = True) -> TriageState:
    """The recorded triage for `spec` (or a new one; written only when `create`)."""
    folder = folder_for(out_root, spec)
    if fresh and folder.exists() and create:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        os.replace(folder, folder.with_name(f"{folder.name}.{stamp}"))
    state = None if fresh else load(folder)
    if state is not None and spec_record(state.spec) != spec_record(spec):
        raise UsageError(f"{folder / STATE_FILE} records another triage", hint="use another --out, or --fresh")
    if state is None:
        state = TriageState(spec=spec, folder=folder)
        if create:
            from xlatools.fsutil import check_output, make_dir

            make_dir(folder, "--out")
            check_output(folder / STATE_FILE, "--out")
            save(state)
    return state
