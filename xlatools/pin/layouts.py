"""The ways a JAX tree has pinned its XLA (or TensorFlow), one entry per upstream era (pure).

`LAYOUTS` is the one table: detection (`detect`), the fields `pin apply` edits and `pin verify`
checks (in xlatools.pin.edit), and the era list in docs/pinning.md all come from it. Dates are
those of jax-ml/jax history; the order is the detection order (first match wins).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from xlatools.errors import PinError
from xlatools.pin import starlark
from xlatools.pin.forms import Form, read_form

PATCH_PREFIX = "xlatools-"  # patch files we place (and may remove) carry this prefix
PATCH_LIST_KEYS = ("patches", "patch_file")
REVISION = "third_party/xla/revision.bzl"
WORKSPACE_BZL = "third_party/xla/workspace.bzl"


@dataclass(frozen=True)
class Field:
    """One pinned value in one file: a top-level assignment or a keyword argument of a call."""

    file: str
    key: str
    value: (
        str  # what the lock gives it: commit, sha256, integrity, strip_prefix, urls, patches, patch_strip, patch_args
    )
    functions: tuple[str, ...] = ()  # the call, if not a top-level assignment ...
    match: tuple[str, str] | None = None  # ... identified by one keyword, e.g. ("name", "xla")
    required: bool = True  # a missing call is an error (else the field is skipped)
    form: str | None = None  # the FormSource (by name) whose URL form picks the lock's archive

    @property
    def what(self) -> str:
        if not self.functions:
            return self.key
        return f'{self.functions[0]}({self.match[0]} = "{self.match[1]}").{self.key}'


@dataclass(frozen=True)
class FormSource:
    """Where the tree names the archive it fetches: one archive rule call."""

    name: str
    file: str
    functions: tuple[str, ...]
    match: tuple[str, str]


@dataclass(frozen=True)
class Probe:
    """One test `detect` makes: an assignment exists, or a form's URL matches a pattern."""

    file: str
    assignment: str | None = None
    form: str | None = None
    url_pattern: str | None = None


@dataclass(frozen=True)
class Layout:
    id: str
    era: str  # when upstream used it
    description: str
    dependency: str  # the lock entry it takes: xla or tensorflow
    probes: tuple[Probe, ...]
    forms: tuple[FormSource, ...]
    fields: tuple[Field, ...]
    patch_dir: str

    @property
    def files(self) -> list[str]:
        return sorted({f.file for f in self.fields} | {f.file for f in self.forms})

    def form_source(self, name: str) -> FormSource:
        return next(source for source in self.forms if source.name == name)


_XLA_ARCHIVE = (("tf_http_archive", "http_archive"), ("name", "xla"))
_XLA_MODULE = (("archive_override",), ("module_name", "xla"))
_TF_ARCHIVE = (("http_archive", "tf_http_archive"), ("name", "org_tensorflow"))
_WS_FORM = FormSource("workspace", WORKSPACE_BZL, *_XLA_ARCHIVE)
_MODULE_FORM = FormSource("module", "MODULE.bazel", *_XLA_MODULE)
_API_URL = r"/repos/[^/]+/[^/]+/tarball/"  # GitHub's API tarball path (api.github.com, or a GitHub Enterprise host)


def _module_fields() -> tuple[Field, ...]:
    # MODULE.bazel archive_override (since 2026-01-23): literal values, SRI digest.
    return tuple(
        Field("MODULE.bazel", key, value, *_XLA_MODULE, required=False, form="module")
        for key, value in (
            ("integrity", "integrity"),
            ("strip_prefix", "strip_prefix"),
            ("urls", "urls"),
            ("patches", "patches"),
            ("patch_strip", "patch_strip"),
        )
    )


def _revision_fields() -> tuple[Field, ...]:
    return (
        Field(REVISION, "XLA_COMMIT", "commit"),
        Field(REVISION, "XLA_SHA256", "sha256", form="workspace"),
        *_module_fields(),
        Field(WORKSPACE_BZL, "patch_file", "patches", *_XLA_ARCHIVE, required=False),
    )


def _archive_call_fields(file: str, spec, form: str) -> tuple[Field, ...]:
    """An http_archive with literal values (the WORKSPACE eras)."""
    return tuple(
        Field(file, key, value, *spec, required=key not in ("patches", "patch_args"), form=form)
        for key, value in (
            ("sha256", "sha256"),
            ("strip_prefix", "strip_prefix"),
            ("urls", "urls"),
            ("patches", "patches"),
            ("patch_args", "patch_args"),
        )
    )


LAYOUTS: tuple[Layout, ...] = (
    Layout(
        "revision_bzl_api",
        "2025-07-21 to 2026-01-27 (JAX 0.7.1 to 0.9.0)",
        "third_party/xla/revision.bzl; workspace.bzl fetches the GitHub API tarball "
        "(top folder <owner>-<repo>-<commit[:7]>); MODULE.bazel archive_override (/archive/, own digest) "
        "from 2026-01-23",
        "xla",
        (Probe(REVISION, assignment="XLA_COMMIT"), Probe(WORKSPACE_BZL, form="workspace", url_pattern=_API_URL)),
        (_WS_FORM, _MODULE_FORM),
        _revision_fields(),
        "third_party/xla",
    ),
    Layout(
        "revision_bzl",
        "2025-06-23 on (API tarball era aside)",
        "third_party/xla/revision.bzl XLA_COMMIT / XLA_SHA256 (/archive/ URL in workspace.bzl) and, since "
        "2026-01-23, MODULE.bazel archive_override; since about 2026-03 workspace.bzl has an empty "
        "patch_file placeholder",
        "xla",
        (Probe(REVISION, assignment="XLA_COMMIT"),),
        (_WS_FORM, _MODULE_FORM),
        _revision_fields(),
        "third_party/xla",
    ),
    Layout(
        "workspace_bzl",
        "2023-08-14 to 2025-06-23 (JAX 0.4.15 on)",
        "XLA_COMMIT / XLA_SHA256 in third_party/xla/workspace.bzl",
        "xla",
        (Probe(WORKSPACE_BZL, assignment="XLA_COMMIT"),),
        (_WS_FORM,),
        (
            Field(WORKSPACE_BZL, "XLA_COMMIT", "commit"),
            Field(WORKSPACE_BZL, "XLA_SHA256", "sha256", form="workspace"),
            Field(WORKSPACE_BZL, "patch_file", "patches", *_XLA_ARCHIVE),
        ),
        "third_party/xla",
    ),
    Layout(
        "xla_workspace",
        "2023-03-13 to 2023-08-14 (JAX 0.4.7 to 0.4.14)",
        'WORKSPACE http_archive(name = "xla", ...) with literal sha256, strip_prefix, urls',
        "xla",
        (Probe("WORKSPACE", form="workspace_xla", url_pattern=r"."),),
        (FormSource("workspace_xla", "WORKSPACE", *_XLA_ARCHIVE),),
        _archive_call_fields("WORKSPACE", _XLA_ARCHIVE, "workspace_xla"),
        "third_party/xlatools",
    ),
    Layout(
        "tensorflow_workspace",
        "until 2023-03-13",
        'WORKSPACE http_archive(name = "org_tensorflow", ...) (takes the lock\'s tensorflow entry)',
        "tensorflow",
        (Probe("WORKSPACE", form="workspace_tf", url_pattern=r"."),),
        (FormSource("workspace_tf", "WORKSPACE", *_TF_ARCHIVE),),
        _archive_call_fields("WORKSPACE", _TF_ARCHIVE, "workspace_tf"),
        "third_party/xlatools",
    ),
)

CANDIDATE_FILES = tuple(sorted({probe.file for layout in LAYOUTS for probe in layout.probes} | {"MODULE.bazel"}))


def looked_for() -> list[str]:
    return [f"{layout.id} ({layout.era}): {layout.description}" for layout in LAYOUTS]


@contextlib.contextmanager
def reading(file: str):
    try:
        yield
    except starlark.NotALiteral as exc:
        raise PinError(
            f"{file}: {exc}; xlatools edits only plain literal values, so it changed nothing",
            hint="write the value as one string literal, or edit the file by hand",
        ) from None
    except starlark.StarlarkSyntaxError as exc:
        raise PinError(f"{file}: cannot read it ({exc})", hint="fix the file's syntax, then try again") from None


def find_call(text: str, functions: tuple[str, ...], match: tuple[str, str]) -> starlark.Call | None:
    calls = [starlark.find_call(text, fn, *match) for fn in functions]
    found = [call for call in calls if call is not None]
    return found[0] if found else None


def tree_form(layout: Layout, name: str, texts: dict[str, str | None]) -> Form | None:
    """The URL form one of the layout's archive rules uses, read from the tree (None: absent)."""
    source = layout.form_source(name)
    text = texts.get(source.file)
    if text is None:
        return None
    with reading(source.file):
        call = find_call(text, source.functions, source.match)
        return read_form(text, call, source.file) if call is not None else None


def _probe_holds(layout: Layout, probe: Probe, texts: dict[str, str | None]) -> bool:
    text = texts.get(probe.file)
    if probe.assignment is not None:
        with reading(probe.file):
            return text is not None and starlark.find_assignment(text, probe.assignment) is not None
    form = tree_form(layout, probe.form, texts)
    return form is not None and re.search(probe.url_pattern, form.urls[0]) is not None


def detect(texts: dict[str, str | None]) -> Layout | None:
    """Which layout these file contents are (keys: relative paths; None: file absent)."""
    for layout in LAYOUTS:
        if all(_probe_holds(layout, probe, texts) for probe in layout.probes):
            return layout
    return None


def patch_labels(layout: Layout, names: list[str]) -> list[str]:
    return [f"//{layout.patch_dir}:{name}" for name in names]


def placed_patch_name(index: int, original: str) -> str:
    """File name a lock patch gets in the tree: numbered (order matters), marked as ours."""
    base = re.sub(r"[^A-Za-z0-9._-]", "-", original.rsplit("/", 1)[-1])  # a valid bazel label name
    if not base.endswith(".patch"):
        base += ".patch"
    return f"{PATCH_PREFIX}{index:02d}-{base}"
