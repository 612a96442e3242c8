"""Does a tree (and, with refetch, the archive itself) agree with the lock?

Returns disagreements as sentences; an empty list means everything agrees.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from xlatools.errors import PinError
from xlatools.pin import layouts
from xlatools.pin.apply import detect_layout, entry_for, read_texts
from xlatools.fsutil import sha256_file
from xlatools.pin.cache import ArchiveCache
from xlatools.pin.lock import Lock, LockEntry, entry_problems


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
    found += [d.render() for d in layouts.disagreements(layout, entry, texts, labels)]
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


def _git(path: Path, *args: str) -> subprocess.CompletedProcess:
    from xlatools.pin.refs import git_executable

    return subprocess.run([git_executable(), "-C", str(path), *args], capture_output=True, text=True, timeout=120)


def verify_jax_checkout(lock: Lock, source_dir: Path) -> list[str]:
    """If the lock pins JAX and the tree is a git checkout, it must be at that commit.
    (Uncommitted changes are expected: `pin apply` makes them.) Trees without git are not checked."""
    if lock.jax is None or not (source_dir / ".git").exists() or shutil.which("git") is None:
        return []
    head = _git(source_dir, "rev-parse", "HEAD")
    if head.returncode == 0 and head.stdout.strip() != lock.jax.commit:
        return [f"jax: {source_dir} is at {head.stdout.strip()}, the lock says {lock.jax.commit}"]
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


def verify_archives(lock: Lock, refetch: bool, cache: ArchiveCache | None = None, progress: bool = True) -> list[str]:
    """With refetch: download each archive again, bypassing the cache, and compare digests.
    Without: check a cached copy where there is one (none is fine: CI starts empty)."""
    from xlatools.pin.download import fetch

    cache = cache or ArchiveCache.default()
    found = []
    for entry in lock.entries.values():
        if entry.kind != "archive":
            continue
        if not refetch:
            cached = cache.archive_path(entry.sha256)
            if cached.is_file() and sha256_file(cached) != entry.sha256:
                found.append(f"{entry.name}: cached archive {cached} is corrupt (it will be re-downloaded)")
            continue
        try:
            fetched = fetch(list(entry.urls), tmp_dir=cache.tmp_dir, prefix=entry.strip_prefix or "",
                            commit=entry.commit, label=f"{entry.name}-{entry.commit[:12]}", progress=progress)
        except PinError as exc:  # an unsafe or mismatching archive is a finding; no network is an error
            found.append(f"{entry.name}: refetch failed: {exc.message}" +
                         "".join(f"; {p.render()}" for p in exc.problems))
            continue
        fetched.path.unlink(missing_ok=True)
        if fetched.sha256 != entry.sha256:
            found.append(f"{entry.name}: archive from {fetched.url} has sha256 {fetched.sha256}, "
                         f"the lock says {entry.sha256}")
    return found
