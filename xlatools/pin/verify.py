"""Does a tree (and, with refetch, the archive itself) agree with the lock?

Returns disagreements as sentences; an empty list means everything agrees.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.errors import PinError
from xlatools.pin import edit, layouts
from xlatools.pin.apply import detect_layout, entry_for, read_texts
from xlatools.fsutil import sha256_file
from xlatools.pin.cache import ArchiveCache
from xlatools.pin.lock import Lock, LockEntry, entry_problems

if TYPE_CHECKING:
    from xlatools.console import Reporter


def verify_lock(lock: Lock) -> list[str]:
    """The lock on its own: SRI == hex, formats, patch files unchanged."""
    found = []
    where = lock.path or "lock"
    for entry in lock.entries.values():
        found += [f"{where} [{entry.name}]: {problem}" for problem in entry_problems(entry)]
        for patch in entry.patches:
            path = lock.patch_file(patch)
            if not path.is_file():
                found.append(f"{entry.name}: patch {path} is missing")
            elif sha256_file(path) != patch.sha256:
                found.append(f"{entry.name}: patch {path} changed since the lock was written")
    return found


def verify_tree(lock: Lock, source_dir: Path) -> list[str]:
    source_dir = Path(source_dir)
    found = verify_lock(lock) + verify_jax_checkout(lock, source_dir)
    layout = detect_layout(source_dir)
    entry = entry_for(lock, layout, source_dir)
    if entry.kind == "local":
        return found + verify_local(entry)
    names = [layouts.placed_patch_name(i, p.path) for i, p in enumerate(entry.patches, start=1)]
    labels = layouts.patch_labels(layout, names)
    texts = read_texts(source_dir, layout.files)
    differing, form_problems = edit.disagreements(layout, entry, texts, labels)
    found += inconsistency(layout, entry, texts, differing)
    found += [
        problem.render() + " (re-resolve with `xlatools pin resolve --profile P --source DIR`)"
        for problem in form_problems
    ]
    found += [d.render() for d in differing]
    patch_dir = source_dir / layout.patch_dir
    for name, patch in zip(names, entry.patches):
        placed = patch_dir / name
        if not placed.is_file():
            found.append(f"{layout.patch_dir}/{name}: missing (run `xlatools pin apply`)")
        elif sha256_file(placed) != patch.sha256:
            found.append(f"{layout.patch_dir}/{name}: differs from the lock's patch {patch.path}")
    if patch_dir.is_dir():
        for stale in sorted(set(p.name for p in patch_dir.glob(f"{layouts.PATCH_PREFIX}*.patch")) - set(names)):
            found.append(f"{layout.patch_dir}/{stale}: placed by xlatools but not in the lock")
    return found


def inconsistency(
    layout: layouts.Layout, entry: LockEntry, texts: dict[str, str | None], differing: list[edit.Disagreement]
) -> list[str]:
    """When the tree's own pin files name different commits (upstream sometimes bumped only
    revision.bzl and left MODULE.bazel behind), say so first, and which of them the lock matches."""
    commits = edit.tree_commits(layout, texts)
    if len(set(commits.values())) < 2:
        return []
    pinned = ", ".join(f"{name} pins {commit}" for name, commit in commits.items())
    wrong = {d.file for d in differing}
    matching = [name for name in commits if name not in wrong]
    verdict = (
        f"the lock ({entry.commit}) matches {' and '.join(matching)}"
        if matching
        else f"the lock ({entry.commit}) matches none of them"
    )
    return [
        f"the tree itself is inconsistent: {pinned}; {verdict}. `xlatools pin apply` brings every pin file to the lock"
    ]


def _git(path: Path, *args: str) -> subprocess.CompletedProcess:
    from xlatools.gitcmd import run_git

    return run_git(*args, repo=path, needed_for="checking a git tree against the lock")


def verify_jax_checkout(lock: Lock, source_dir: Path) -> list[str]:
    """If the lock pins JAX and the tree is a git checkout, it must be at that commit.
    (Uncommitted changes are expected: `pin apply` makes them.) Trees without git are not checked."""
    from xlatools.gitcmd import have_git

    if lock.jax is None or not (source_dir / ".git").exists() or not have_git():
        return []
    head = _git(source_dir, "rev-parse", "HEAD")
    if head.returncode == 0 and head.stdout.strip() != lock.jax.commit:
        return [
            f"jax: {source_dir} is at {head.stdout.strip()}, the lock says {lock.jax.commit} "
            f"(`pin apply` cannot change that: check out {lock.jax.commit[:12]}, or set source.jax.commit "
            "in the profile to this tree's commit and re-resolve)"
        ]
    return []


def verify_local(entry: LockEntry) -> list[str]:
    """A local checkout still at the recorded commit (and not newly dirty)."""
    path = Path(entry.local_path or "")
    if not path.is_dir():
        return [f"{entry.name}: local checkout {path} does not exist"]
    head = _git(path, "rev-parse", "HEAD")
    if head.returncode != 0:
        return [f"{entry.name}: {path} is not a git checkout"]
    found = []
    if head.stdout.strip() != entry.commit:
        found.append(f"{entry.name}: local checkout {path} is at {head.stdout.strip()}, the lock says {entry.commit}")
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    if status.stdout.strip() and not entry.dirty:
        found.append(f"{entry.name}: local checkout {path} has uncommitted changes the lock did not record")
    return found


def verify_archives(
    lock: Lock, refetch: bool, cache: ArchiveCache | None = None, reporter: Reporter | None = None
) -> list[str]:
    """With refetch: download each archive again, bypassing the cache, and compare digests.
    Without: check a cached copy where there is one (none is fine: CI starts empty)."""
    cache = cache or ArchiveCache.default()
    found = []
    for entry in lock.entries.values():
        for archive in entry.archives:
            found += _verify_archive(entry, archive, refetch, cache, reporter)
    return found


def _verify_archive(
    entry: LockEntry, archive, refetch: bool, cache: ArchiveCache, reporter: Reporter | None
) -> list[str]:
    from xlatools.pin.download import fetch

    if not refetch:
        cached = cache.archive_path(archive.sha256)
        if cached.is_file() and sha256_file(cached) != archive.sha256:
            return [f"{entry.name}: cached archive {cached} is corrupt (it will be re-downloaded)"]
        return []
    try:
        fetched = fetch(
            list(archive.urls),
            tmp_dir=cache.tmp_dir,
            prefix=archive.strip_prefix or "",
            commit=entry.commit,
            label=f"{entry.name}-{entry.commit[:12]}",
            reporter=reporter,
        )
    except PinError as exc:  # an unsafe or mismatching archive is a finding; no network is an error
        return [f"{entry.name}: refetch failed: {exc.message}" + "".join(f"; {p.render()}" for p in exc.problems)]
    fetched.path.unlink(missing_ok=True)
    if fetched.sha256 != archive.sha256:
        return [f"{entry.name}: archive from {fetched.url} has sha256 {fetched.sha256}, the lock says {archive.sha256}"]
    return []
