"""What every record shares: JSON conversion, the fields of every bundle manifest, and the one reader.

Records are plain dataclasses (the run path writes them, and pydantic's import alone would cost
it ~60 ms); reading validates them with pydantic's TypeAdapter (imported only then), which
builds the nested dataclasses, converts enums and reports every problem with its key path.
Readers ignore keys they do not know, so a manifest from a newer xlatools of the same schema
version still reads.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from xlatools.errors import Problem, UsageError
from xlatools.vocab import Status

SCHEMA_VERSION = 1  # of every bundle manifest; readers refuse a newer one
MANIFEST = "manifest.json"
MAX_RECORD_BYTES = 512 * 1024 * 1024  # a file index of a huge dump stays far below this
_PROBLEMS_SHOWN = 8

R = TypeVar("R")
# Field metadata: a None value is left out of the JSON (a key that manifests only ever had when set).
OMIT_NONE = {"omit_none": True}
# For a record with a JSON key that is a Python keyword (spelled `from_` in the dataclass):
# `__pydantic_config__ = KEYWORD_KEYS` in its class body makes the reader accept `from`.
KEYWORD_KEYS = {"alias_generator": lambda name: name.rstrip("_"), "populate_by_name": True}


def to_json(value: Any) -> Any:
    """A record (or anything inside one) as JSON-ready data: dataclasses become objects, enums
    their values, paths strings, tuples lists. A field named like a Python keyword plus `_`
    (`from_`) is written as the keyword (`from`); readers map it back (KEYWORD_KEYS)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name.rstrip("_"): to_json(item)
            for f in dataclasses.fields(value)
            if (item := getattr(value, f.name)) is not None or not f.metadata.get("omit_none")
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k.value if isinstance(k, enum.Enum) else k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


@dataclass(kw_only=True)
class HostInfo:
    hostname: str | None = None
    platform: str | None = None
    machine: str | None = None
    cpu_count: int | None = None


def host_info() -> HostInfo:
    import sys

    if hasattr(os, "uname"):  # POSIX: the same host name as socket.gethostname(), without importing socket
        uname = os.uname()
        hostname, machine = uname.nodename, uname.machine
    else:  # pragma: no cover - Windows
        import socket

        hostname, machine = socket.gethostname(), None
    return HostInfo(hostname=hostname, platform=sys.platform, machine=machine, cpu_count=os.cpu_count())


@dataclass(kw_only=True)
class FileEntry:
    path: str  # relative to the bundle, with /
    size: int
    sha256: str


@dataclass(kw_only=True)
class BundleRecord:
    """The fields of every bundle manifest. Each bundle kind subclasses it and fixes `kind`."""

    schema_version: int = SCHEMA_VERSION
    kind: str = ""
    name: str = ""
    id: str = ""
    created: str = ""  # ISO 8601 UTC
    status: Status = Status.RUNNING
    xlatools_version: str | None = None
    command: str | None = None  # as typed, secrets redacted
    argv: list[str] = field(default_factory=list)
    bundle: str | None = None  # the bundle folder when it was written
    host: HostInfo | None = None
    exit_code: int | None = None  # xlatools' exit code for this bundle
    error: str | None = None  # why xlatools could not finish (status error), or what failed
    started: str | None = None
    finished: str | None = None
    files: list[FileEntry] = field(default_factory=list)  # every file with size and sha256 (final manifests)


B = TypeVar("B", bound=BundleRecord)


def invoked(record: B, argv: list[str] | None) -> B:
    """`record` with what every bundle manifest says of the command that made it: the xlatools version, the
    command as typed (secrets redacted), its argv, and the host."""
    from xlatools import __version__
    from xlatools.redact import redact_argv

    record.xlatools_version = __version__
    record.argv = list(argv or [])
    record.command = "xlatools " + " ".join(redact_argv(list(argv))) if argv else None
    record.host = host_info()
    return record


# kind -> (module, class): bundle kinds register here; the reader imports only the one it needs.
KINDS: dict[str, tuple[str, str]] = {
    "run": ("xlatools.records.run", "RunManifest"),
    "replay": ("xlatools.records.replay", "ReplayManifest"),
    "build": ("xlatools.records.build", "BuildManifest"),
    "reduce": ("xlatools.records.reduce", "ReduceManifest"),
    "debug": ("xlatools.records.debug", "DebugManifest"),
}


def record_class(kind: str) -> type[BundleRecord]:
    import importlib

    module, name = KINDS[kind]
    return getattr(importlib.import_module(module), name)


def manifest_path(path: Path) -> Path:
    """The manifest of a bundle folder, its `latest` link or the manifest file itself."""
    path = Path(path).expanduser()
    return path if path.name == MANIFEST or (path.exists() and not path.is_dir()) else path / MANIFEST


def read_bundle(path: Path, kinds: tuple[str, ...] | None = None) -> BundleRecord:
    """The validated manifest of the bundle at `path` (a folder, `latest`, or manifest.json).

    Bad input (exit 2, naming the file and what is wrong): no manifest, not JSON, not an
    xlatools manifest, a kind not in `kinds`, a newer schema, fields of the wrong shape."""
    file = manifest_path(path)
    data = read_json_object(file, "manifest", hint="is this an xlatools bundle?")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS or "schema_version" not in data:
        raise UsageError(
            f"{file}: not an xlatools bundle manifest (kind {kind!r})",
            hint="give a bundle folder written by xlatools run, replay, build, ...",
        )
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise UsageError(
            f"{file}: manifest schema version {version!r}; this xlatools reads up to {SCHEMA_VERSION}",
            hint="read it with the xlatools that wrote it, or upgrade xlatools",
        )
    if kinds is not None and kind not in kinds:
        raise UsageError(
            f"{file}: a {kind} bundle; expected {' or '.join(kinds)}", hint=f"give a {' or '.join(kinds)} bundle"
        )
    from xlatools.redact import redact

    # Redacted as the writer would: a manifest written elsewhere (or by a release that hid less) shows no secret.
    return validate(redact(data), record_class(kind), file, what=f"{kind} manifest")


def read_record(path: Path, cls: type[R], what: str, hint: str | None = None) -> R:
    """Any record file (a state file, a pack's index): read and validated like a manifest."""
    return validate(read_json_object(Path(path), what, hint=hint), cls, Path(path), what=what, hint=hint)


def read_json_object(path: Path, what: str, hint: str | None = None) -> dict[str, Any]:  # raw JSON, validated next
    """A JSON object from a regular file; anything else (missing, a folder, a FIFO, too big,
    not UTF-8, not JSON, nested too deep, not an object) is bad input naming the file."""
    import json

    from xlatools.fsutil import read_user_text

    text = read_user_text(Path(path), what, max_bytes=MAX_RECORD_BYTES, hint=hint)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{path}: the {what} is not valid JSON ({exc})", hint=hint) from None
    except RecursionError:
        raise UsageError(f"{path}: the {what} is nested too deeply to be one of ours", hint=hint) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the {what} is a JSON {type(data).__name__}, not an object", hint=hint)
    return data


def validate(data: dict[str, Any], cls: type[R], file: Path, what: str, hint: str | None = None) -> R:  # raw JSON in
    """`data` as a `cls` record, or a UsageError listing each problem with its key path."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return _adapter(cls, TypeAdapter).validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = [
            Problem(error["msg"], file=str(file), key=key_path(error["loc"])) for error in errors[:_PROBLEMS_SHOWN]
        ]
        more = len(errors) - len(problems)
        raise UsageError(
            f"{file}: the {what} does not have the expected shape ({len(errors)} problem"
            f"{'s' if len(errors) != 1 else ''}{f', {more} not shown' if more else ''})",
            hint=hint or "the file is damaged or was not written by xlatools",
            problems=problems,
        ) from None
    except RecursionError:
        raise UsageError(f"{file}: the {what} is nested too deeply to be one of ours", hint=hint) from None


_ADAPTERS: dict[type, Any] = {}


def _adapter(cls: type, make) -> Any:
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = make(cls)
    return _ADAPTERS[cls]


def key_path(loc: tuple[Any, ...]) -> str:
    """('jax', 'devices', 0, 'platform') -> 'jax.devices[0].platform'."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"
