"""The three ways a JAX tree pins its XLA (or TensorFlow), and how to edit each (pure).

  revision_bzl          today: third_party/xla/revision.bzl (XLA_COMMIT, XLA_SHA256) and, since
                        Jan 2026, MODULE.bazel `archive_override(module_name = "xla", ...)`
  workspace_bzl         mid 2023 - mid 2025: XLA_COMMIT / XLA_SHA256 in third_party/xla/workspace.bzl
  tensorflow_workspace  before Feb 2023: WORKSPACE `http_archive(name = "org_tensorflow", ...)`

Everything here is text in, text out: `detect` looks at file contents, `plan` returns the
new contents, `disagreements` compares a tree's values with a lock entry.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Callable

from xlatools.errors import PinError
from xlatools.pin import starlark
from xlatools.pin.lock import LockEntry
from xlatools.pin.sri import hex_to_sri

PATCH_PREFIX = "xlatools-"  # patch files we place (and may remove) carry this prefix
PATCH_LIST_KEYS = ("patches", "patch_file")
KEEP = object()  # a field on which the lock has no opinion
REMOVE = object()  # the keyword argument must be absent


@dataclass(frozen=True)
class Field:
    """One pinned value in one file: a top-level assignment or a keyword argument of a call."""

    file: str
    key: str
    want: Callable[[LockEntry, list[str], object], object]  # (entry, our patch labels, current) -> value
    functions: tuple[str, ...] = ()  # the call, if not a top-level assignment ...
    match: tuple[str, str] | None = None  # ... identified by one keyword, e.g. ("name", "xla")
    required: bool = True  # a missing call is an error (else the field is skipped)

    @property
    def what(self) -> str:
        if not self.functions:
            return self.key
        return f'{self.functions[0]}({self.match[0]} = "{self.match[1]}").{self.key}'


@dataclass(frozen=True)
class Layout:
    id: str
    description: str
    dependency: str  # the lock entry it takes: xla or tensorflow
    fields: tuple[Field, ...]
    patch_dir: str
    patch_flag: tuple[str, object] = field(default=("", None))  # e.g. ("patch_strip", 1) next to the list

    @property
    def files(self) -> list[str]:
        return sorted({f.file for f in self.fields})


def _merge_patches(entry: LockEntry, labels: list[str], current) -> object:
    """Keep patches someone else listed; replace ours. An empty result means no argument."""
    foreign = [item for item in (current or []) if isinstance(item, str) and f":{PATCH_PREFIX}" not in item]
    merged = foreign + labels
    return merged if merged else REMOVE


def _only_with_patches(value):
    return lambda entry, labels, current: value if labels else KEEP


_COMMIT = lambda entry, labels, current: entry.commit  # noqa: E731
_SHA256 = lambda entry, labels, current: entry.sha256  # noqa: E731
_XLA_ARCHIVE = (("tf_http_archive", "http_archive"), ("name", "xla"))
_XLA_MODULE = (("archive_override",), ("module_name", "xla"))
_TF_ARCHIVE = (("http_archive", "tf_http_archive"), ("name", "org_tensorflow"))

REVISION_BZL = Layout(
    "revision_bzl",
    "third_party/xla/revision.bzl + MODULE.bazel archive_override (JAX since 2025/2026)",
    "xla",
    (
        Field("third_party/xla/revision.bzl", "XLA_COMMIT", _COMMIT),
        Field("third_party/xla/revision.bzl", "XLA_SHA256", _SHA256),
        Field("MODULE.bazel", "integrity", lambda e, l, c: hex_to_sri(e.sha256), *_XLA_MODULE, required=False),
        Field("MODULE.bazel", "strip_prefix", lambda e, l, c: e.strip_prefix, *_XLA_MODULE, required=False),
        Field("MODULE.bazel", "urls", lambda e, l, c: list(e.urls), *_XLA_MODULE, required=False),
        Field("MODULE.bazel", "patches", _merge_patches, *_XLA_MODULE, required=False),
        Field("MODULE.bazel", "patch_strip", _only_with_patches(1), *_XLA_MODULE, required=False),
        Field("third_party/xla/workspace.bzl", "patch_file", _merge_patches, *_XLA_ARCHIVE, required=False),
    ),
    patch_dir="third_party/xla",
)

WORKSPACE_BZL = Layout(
    "workspace_bzl",
    "XLA_COMMIT / XLA_SHA256 in third_party/xla/workspace.bzl (JAX mid 2023 - mid 2025)",
    "xla",
    (
        Field("third_party/xla/workspace.bzl", "XLA_COMMIT", _COMMIT),
        Field("third_party/xla/workspace.bzl", "XLA_SHA256", _SHA256),
        Field("third_party/xla/workspace.bzl", "patch_file", _merge_patches, *_XLA_ARCHIVE),
    ),
    patch_dir="third_party/xla",
)

TENSORFLOW_WORKSPACE = Layout(
    "tensorflow_workspace",
    'WORKSPACE http_archive(name = "org_tensorflow") (JAX before Feb 2023)',
    "tensorflow",
    (
        Field("WORKSPACE", "sha256", _SHA256, *_TF_ARCHIVE),
        Field("WORKSPACE", "strip_prefix", lambda e, l, c: e.strip_prefix, *_TF_ARCHIVE),
        Field("WORKSPACE", "urls", lambda e, l, c: list(e.urls), *_TF_ARCHIVE),
        Field("WORKSPACE", "patches", _merge_patches, *_TF_ARCHIVE),
        Field("WORKSPACE", "patch_args", _only_with_patches(["-p1"]), *_TF_ARCHIVE),
    ),
    patch_dir="third_party/xlatools",
)

LAYOUTS = (REVISION_BZL, WORKSPACE_BZL, TENSORFLOW_WORKSPACE)

SHAPES_LOOKED_FOR = [
    'third_party/xla/revision.bzl with XLA_COMMIT = "<40 hex>" (MODULE.bazel archive_override optional)',
    'third_party/xla/workspace.bzl with XLA_COMMIT = "<40 hex>"',
    'WORKSPACE with http_archive(name = "org_tensorflow", ...)',
]


@contextlib.contextmanager
def _reading(file: str):
    try:
        yield
    except starlark.StarlarkSyntaxError as exc:
        raise PinError(f"{file}: cannot read it ({exc})", hint="fix the file's syntax, then try again") from None


def detect(texts: dict[str, str | None]) -> Layout | None:
    """Which layout these file contents are (keys: relative paths; None: file absent)."""
    revision = texts.get("third_party/xla/revision.bzl")
    with _reading("third_party/xla/revision.bzl"):
        if revision is not None and starlark.find_assignment(revision, "XLA_COMMIT"):
            return REVISION_BZL
    workspace_bzl = texts.get("third_party/xla/workspace.bzl")
    with _reading("third_party/xla/workspace.bzl"):
        if workspace_bzl is not None and starlark.find_assignment(workspace_bzl, "XLA_COMMIT"):
            return WORKSPACE_BZL
    workspace = texts.get("WORKSPACE")
    with _reading("WORKSPACE"):
        if workspace is not None and _find(workspace, TENSORFLOW_WORKSPACE.fields[0]) is not None:
            return TENSORFLOW_WORKSPACE
    return None


CANDIDATE_FILES = ("third_party/xla/revision.bzl", "third_party/xla/workspace.bzl", "WORKSPACE", "MODULE.bazel")


def _find(text: str, spec: Field):
    calls = [starlark.find_call(text, fn, *spec.match) for fn in spec.functions]
    found = [call for call in calls if call is not None]
    return found[0] if found else None


def patch_labels(layout: Layout, names: list[str]) -> list[str]:
    return [f"//{layout.patch_dir}:{name}" for name in names]


def placed_patch_name(index: int, original: str) -> str:
    """File name a lock patch gets in the tree: numbered (order matters), marked as ours."""
    base = re.sub(r"[^A-Za-z0-9._-]", "-", original.rsplit("/", 1)[-1])  # a valid bazel label name
    if not base.endswith(".patch"):
        base += ".patch"
    return f"{PATCH_PREFIX}{index:02d}-{base}"


@dataclass(frozen=True)
class Disagreement:
    file: str
    what: str
    actual: object
    expected: object

    def render(self) -> str:
        if self.expected is REMOVE:
            return f"{self.file}: {self.what} is {self.actual!r}, the lock has no patches there"
        return f"{self.file}: {self.what} is {self.actual!r}, the lock says {self.expected!r}"


def _current(text: str, spec: Field):
    """(call or None, current value, present?) of one field in one file's text."""
    with _reading(spec.file):
        return _current_value(text, spec)


def _current_value(text: str, spec: Field):
    if not spec.functions:
        span = starlark.find_assignment(text, spec.key)
        if span is None:
            raise PinError(f"{spec.file}: no top-level `{spec.key} = ...` found",
                           hint="the file does not have the shape xlatools edits; see docs/pinning.md")
        return None, starlark.literal(text, span), True
    call = _find(text, spec)
    if call is None:
        return None, None, False
    arg = call.kwarg(spec.key)
    return call, (starlark.literal(text, arg.value) if arg else None), arg is not None


def plan(layout: Layout, entry: LockEntry, texts: dict[str, str | None], labels: list[str]) -> dict[str, str]:
    """New contents of the layout's files (only those that change)."""
    new = {name: text for name, text in texts.items() if text is not None}
    listed_patches = False
    for spec in layout.fields:
        text = new.get(spec.file)
        if text is None:
            if spec.required:
                raise PinError(f"{spec.file} is missing", hint=f"layout {layout.id} needs it; see docs/pinning.md")
            continue
        call, current, present = _current(text, spec)
        if spec.functions and call is None:
            if spec.required:
                raise PinError(f"{spec.file}: no {spec.what.rsplit('.', 1)[0]} call found",
                               hint="the file does not have the shape xlatools edits; see docs/pinning.md")
            continue
        listed_patches = listed_patches or spec.key in PATCH_LIST_KEYS
        want = spec.want(entry, labels, current)
        if want is KEEP:
            continue
        if not spec.functions:
            edits = starlark.set_assignment(text, spec.key, want)
        elif want is REMOVE:
            edits = starlark.remove_kwarg(text, call, spec.key) if present else []
        else:
            edits = starlark.set_kwarg(text, call, spec.key, want)
        new[spec.file] = starlark.apply_edits(text, edits)
    if labels and not listed_patches:
        raise PinError(f"the tree has no place to list patches ({layout.description})",
                       hint="apply the patches yourself, or drop `patches:` from the profile")
    return {name: text for name, text in new.items() if text != texts.get(name)}


def disagreements(layout: Layout, entry: LockEntry, texts: dict[str, str | None], labels: list[str]) -> list[Disagreement]:
    found = []
    for spec in layout.fields:
        text = texts.get(spec.file)
        if text is None:
            if spec.required:
                found.append(Disagreement(spec.file, "file", "missing", "present"))
            continue
        call, current, present = _current(text, spec)
        if spec.functions and call is None:
            if spec.required:
                found.append(Disagreement(spec.file, spec.what.rsplit(".", 1)[0], "missing", "present"))
            continue
        want = spec.want(entry, labels, current)
        if want is KEEP or (want is REMOVE and not present):
            continue
        if want is REMOVE or current != want:
            found.append(Disagreement(spec.file, spec.what, current if present else "absent", want))
    return found


def upstream_url_warnings(layout: Layout, entry: LockEntry, default_url: str) -> list[str]:
    """workspace.bzl derives URL and strip prefix from the commit; say so if the lock's differ."""
    if layout.dependency != "xla" or entry.kind != "archive":
        return []
    warnings = []
    if entry.urls and entry.urls[0] != default_url:
        warnings.append(
            f"third_party/xla/workspace.bzl downloads {default_url}, not {entry.urls[0]} from the lock; "
            "WORKSPACE builds fetch upstream's archive (MODULE.bazel, where present, uses the lock's URLs)"
        )
    if entry.strip_prefix != f"xla-{entry.commit}":
        warnings.append(f"third_party/xla/workspace.bzl strips 'xla-<commit>', the lock says '{entry.strip_prefix}'")
    return warnings
