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
from xlatools.fsutil import write_failure
from xlatools.pin import edit, layouts, worktree
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
    hand_edits: dict[str, list[str]] = field(default_factory=dict)  # uncommitted edits apply would replace


@dataclass(frozen=True)
class ApplyResult:
    changed: list[Path]
    diff: str
    layout: str
    warnings: list[str] = field(default_factory=list)
    replaced: dict[str, list[str]] = field(default_factory=dict)  # hand edits overwritten (--force) or shown


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
            problems=[Problem(f"looked for: {shape}") for shape in layouts.looked_for()],
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
            raise PinError(
                f"patch {path} (from the lock) cannot be read: {exc.strerror}",
                hint="patch paths in the lock are relative to the lock file",
            ) from None
        if hashlib.sha256(data).hexdigest() != patch.sha256:
            raise PinError(
                f"patch {path} changed since the lock was written",
                hint="re-run `xlatools pin resolve` to record the new patch",
            )
        placed.append((layouts.placed_patch_name(index, patch.path), data))
    return placed


def made_for_warnings(lock: Lock, layout: layouts.Layout, source_dir: Path) -> list[str]:
    """A lock made for another JAX commit (or tree layout) may not fit this tree: say so, with a way out."""
    wanted = lock.jax_commit
    at = worktree.head(source_dir) if wanted else None
    warnings = []
    if wanted and at and at != wanted:
        warnings.append(
            f"the lock was made for JAX {wanted}, but {source_dir} is at {at}; XLA pins are paired with the JAX "
            f"commit they were made for. Either check that commit out (`git -C {source_dir} checkout {wanted[:12]}`) "
            f"or re-resolve for this tree (`xlatools pin resolve --profile P --source {source_dir}`)"
        )
    made = lock.made_for.layout if lock.made_for else None
    if made and made != layout.id:
        warnings.append(
            f"the lock was resolved against a {made} tree, {source_dir} is {layout.id}; "
            f"re-resolve with `xlatools pin resolve --profile P --source {source_dir}`"
        )
    return warnings


def plan_tree(lock: Lock, source_dir: Path) -> TreePlan:
    layout = detect_layout(source_dir)
    entry = entry_for(lock, layout, source_dir)
    if entry.kind == "local":
        note = (
            f"{entry.name} is a local checkout ({entry.local_path}); the tree is left as it is and builds "
            f"pass --local_xla_path={entry.local_path}"
        )
        return TreePlan(layout, entry, {}, (), {}, (note,))
    patches = lock_patches(lock, entry)
    labels = layouts.patch_labels(layout, [name for name, _ in patches])
    texts = read_texts(source_dir, layout.files)
    new_texts = edit.plan(layout, entry, texts, labels)
    writes = {name: text.encode("utf-8") for name, text in new_texts.items()}
    patch_dir = source_dir / layout.patch_dir
    for name, data in patches:
        target = f"{layout.patch_dir}/{name}"
        if _read(source_dir / target) != data:
            writes[target] = data
    if patches and not any((patch_dir / build).is_file() for build in ("BUILD", "BUILD.bazel")):
        writes[f"{layout.patch_dir}/BUILD.bazel"] = BUILD_FILE_TEXT.encode()
    wanted = {name for name, _ in patches}
    deletes = (
        tuple(
            f"{layout.patch_dir}/{path.name}"
            for path in sorted(patch_dir.glob(f"{layouts.PATCH_PREFIX}*.patch"))
            if path.name not in wanted
        )
        if patch_dir.is_dir()
        else ()
    )
    old = {name: _read(source_dir / name) for name in [*writes, *deletes]}
    edits = worktree.hand_edits(source_dir, sorted(new_texts)) if new_texts else {}
    return TreePlan(layout, entry, writes, deletes, old, tuple(made_for_warnings(lock, layout, source_dir)), edits)


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
        chunks.extend(
            difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), from_name, to_name)
        )
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
            staged.append((name, Path(tmp)))  # before writing: a full disk must not leave it behind
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, (target.stat().st_mode & 0o7777) if target.exists() else 0o644)
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


def refuse_hand_edits(plan: TreePlan, source_dir: Path) -> None:
    if plan.hand_edits:
        raise PinError(
            f"{len(plan.hand_edits)} pin file(s) in {source_dir} have uncommitted edits that apply would replace",
            problems=[Problem(f"{name}: {' | '.join(lines)}") for name, lines in plan.hand_edits.items()],
            hint=f"commit or stash them (`git -C {source_dir} stash`), look at `pin apply --dry-run`, "
            "or pass --force to replace them",
        )


def apply_lock(lock: Lock, source_dir: Path, dry_run: bool = False, force: bool = False) -> ApplyResult:
    """Write the lock into the tree. Uncommitted hand edits to the pin files are refused unless force."""
    source_dir = Path(source_dir)
    plan = plan_tree(lock, source_dir)
    diff = render_diff(plan)
    changed = [source_dir / name for name in sorted([*plan.writes, *plan.deletes])]
    warnings = list(plan.warnings)
    warnings += [
        f"replaces uncommitted edits in {name}: {' | '.join(lines)}" for name, lines in plan.hand_edits.items()
    ]
    if not dry_run:
        if not force:
            refuse_hand_edits(plan, source_dir)
        try:
            changed = execute(plan, source_dir)
        except OSError as exc:
            raise write_failure(
                exc,
                f"--source {source_dir}: cannot write the pin files ({exc.strerror}); nothing was changed",
                hint="run it on a writable tree",
            ) from None
        try:
            worktree.record_written(source_dir, {n: d for n, d in plan.writes.items() if n in layout_files(plan)})
        except OSError as exc:
            warnings.append(
                f"could not record what apply wrote ({exc.strerror}): the next apply may call these changes hand edits"
            )
    return ApplyResult(changed, diff, plan.layout.id, warnings, dict(plan.hand_edits))


def layout_files(plan: TreePlan) -> set[str]:
    return set(plan.layout.files)
