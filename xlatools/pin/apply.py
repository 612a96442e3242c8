"""Apply a lock to a JAX source tree: plan (pure, in layouts) then write atomically."""

from __future__ import annotations

import difflib
import hashlib
import os
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from xlatools.errors import PinError, Problem
from xlatools.pin import layouts
from xlatools.pin.lock import Lock, LockEntry

BUILD_FILE_TEXT = "# Created by xlatools so that the patch files next to it can be used as labels.\n"


@dataclass(frozen=True)
class TreePlan:
    layout: layouts.Layout
    entry: LockEntry
    writes: dict[str, bytes]  # relative path -> new content
    deletes: tuple[str, ...]  # relative paths of our stale patch files
    old: dict[str, bytes | None]  # relative path -> content before (None: absent)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApplyResult:
    changed: list[Path]
    diff: str
    layout: str
    warnings: list[str] = field(default_factory=list)


def read_texts(source_dir: Path, names) -> dict[str, str | None]:
    texts = {}
    for name in names:
        path = source_dir / name
        try:
            texts[name] = path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError) as exc:
            raise PinError(f"cannot read {path}: {exc}") from None
    return texts


def detect_layout(source_dir: Path) -> layouts.Layout:
    if not source_dir.is_dir():
        raise PinError(f"--source {source_dir}: not a directory", hint="point it at the root of a JAX checkout")
    layout = layouts.detect(read_texts(source_dir, layouts.CANDIDATE_FILES))
    if layout is None:
        present = [name for name in layouts.CANDIDATE_FILES if (source_dir / name).is_file()]
        raise PinError(
            f"{source_dir}: unrecognised JAX tree layout; found {', '.join(present) or 'none of the files looked at'}",
            hint="xlatools edits JAX trees that pin XLA (or TensorFlow) in one of the shapes listed; "
                 "is this the root of a JAX checkout?",
            problems=[Problem(f"looked for: {shape}") for shape in layouts.SHAPES_LOOKED_FOR],
        )
    return layout


def entry_for(lock: Lock, layout: layouts.Layout, source_dir: Path) -> LockEntry:
    entry = lock.get(layout.dependency)
    if entry is None:
        where = lock.path or "the lock"
        raise PinError(
            f"{source_dir} pins {layout.dependency} ({layout.description}), but {where} has no "
            f"'{layout.dependency}' entry",
            hint=f"add source.{layout.dependency} to the profile and run `xlatools pin resolve`",
        )
    return entry


def lock_patches(lock: Lock, entry: LockEntry) -> list[tuple[str, bytes]]:
    """(placed file name, content) of each patch, checked against the sha256 in the lock."""
    placed = []
    for index, patch in enumerate(entry.patches, start=1):
        path = lock.patch_file(patch)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise PinError(f"patch {path} (from the lock) cannot be read: {exc.strerror}",
                           hint="patch paths in the lock are relative to the lock file") from None
        if hashlib.sha256(data).hexdigest() != patch.sha256:
            raise PinError(f"patch {path} changed since the lock was written",
                           hint="re-run `xlatools pin resolve` to record the new patch")
        placed.append((layouts.placed_patch_name(index, patch.path), data))
    return placed


def plan_tree(lock: Lock, source_dir: Path) -> TreePlan:
    layout = detect_layout(source_dir)
    entry = entry_for(lock, layout, source_dir)
    if entry.kind == "local":
        note = (f"{entry.name} is a local checkout ({entry.local_path}); the tree is left as it is and builds "
                f"pass --local_xla_path={entry.local_path}")
        return TreePlan(layout, entry, {}, (), {}, (note,))
    patches = lock_patches(lock, entry)
    labels = layouts.patch_labels(layout, [name for name, _ in patches])
    texts = read_texts(source_dir, layout.files)
    new_texts = layouts.plan(layout, entry, texts, labels)
    writes = {name: text.encode("utf-8") for name, text in new_texts.items()}
    patch_dir = source_dir / layout.patch_dir
    for name, data in patches:
        target = f"{layout.patch_dir}/{name}"
        if _read(source_dir / target) != data:
            writes[target] = data
    if patches and not any((patch_dir / build).is_file() for build in ("BUILD", "BUILD.bazel")):
        writes[f"{layout.patch_dir}/BUILD.bazel"] = BUILD_FILE_TEXT.encode()
    wanted = {name for name, _ in patches}
    deletes = tuple(
        f"{layout.patch_dir}/{path.name}" for path in sorted(patch_dir.glob(f"{layouts.PATCH_PREFIX}*.patch"))
        if path.name not in wanted
    ) if patch_dir.is_dir() else ()
    old = {name: _read(source_dir / name) for name in [*writes, *deletes]}
    warnings = []
    if (source_dir / "third_party/xla/workspace.bzl").is_file():
        warnings = layouts.upstream_url_warnings(layout, entry, _default_url(entry))
    return TreePlan(layout, entry, writes, deletes, old, tuple(warnings))


def _default_url(entry: LockEntry) -> str:
    from xlatools.pin.upstream import default_url

    return default_url(entry.name, entry.commit)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def render_diff(plan: TreePlan) -> str:
    chunks = []
    for name in sorted([*plan.writes, *plan.deletes]):
        before = (plan.old.get(name) or b"").decode("utf-8", errors="replace")
        after = plan.writes.get(name, b"").decode("utf-8", errors="replace")
        from_name = f"a/{name}" if plan.old.get(name) is not None else "/dev/null"
        to_name = f"b/{name}" if name in plan.writes else "/dev/null"
        chunks.extend(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                           from_name, to_name))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in chunks)


def execute(plan: TreePlan, source_dir: Path) -> list[Path]:
    """Write every file to a temp file first, then swap them all in with Ctrl-C held off,
    so revision.bzl and MODULE.bazel never disagree on disk."""
    staged: list[tuple[str, Path]] = []
    try:
        for name, data in plan.writes.items():
            target = source_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, (target.stat().st_mode & 0o7777) if target.exists() else 0o644)
            staged.append((name, Path(tmp)))
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            for name, tmp in staged:
                os.replace(tmp, source_dir / name)
            for name in plan.deletes:
                (source_dir / name).unlink(missing_ok=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    except BaseException:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise
    return [source_dir / name for name in sorted([*plan.writes, *plan.deletes])]


def apply_lock(lock: Lock, source_dir: Path, dry_run: bool = False) -> ApplyResult:
    source_dir = Path(source_dir)
    plan = plan_tree(lock, source_dir)
    diff = render_diff(plan)
    changed = [source_dir / name for name in sorted([*plan.writes, *plan.deletes])]
    if not dry_run:
        changed = execute(plan, source_dir)
    return ApplyResult(changed, diff, plan.layout.id, list(plan.warnings))
