"""Profile `source:` -> lock entries: commit resolved, archive downloaded (or cached) and verified.

Nothing is written to the lock here; the caller writes the whole lock once, after every
dependency resolved, so a failure in any of them leaves the old lock as it was.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bundle import utc_now
from xlatools.errors import FetchError, PinError
from xlatools.pin import refs
from xlatools.pin.cache import ArchiveCache
from xlatools.pin.lock import Archive, Lock, LockEntry, MadeFor, PatchEntry, load_lock
from xlatools.pin.sri import hex_to_sri
from xlatools.pin.upstream import UPSTREAMS, expand

if TYPE_CHECKING:
    from xlatools.console import Reporter


@dataclass(frozen=True)
class Outcome:
    entry: LockEntry
    source: str  # "download", "cache", "local"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolveResult:
    lock: Lock  # the new lock, not yet written
    outcomes: tuple[Outcome, ...]
    dropped: list[str]  # dependencies the profile no longer names
    changed: bool  # differs from the lock on disk (resolution times aside)


def url_templates(name: str, dep) -> list[str]:
    if dep.urls:
        return list(dep.urls)
    upstream = UPSTREAMS[name]
    repo = (dep.repo or "").rstrip("/").removesuffix(".git")
    if repo and repo != upstream.repo and repo.startswith("https://github.com/"):
        return [f"{repo}/archive/{{commit}}.tar.gz"]  # a fork: its own archives
    return [upstream.url]


def strip_prefix_template(name: str, dep) -> str:
    if dep.strip_prefix:
        return dep.strip_prefix
    repo = (dep.repo or "").rstrip("/").removesuffix(".git")
    if dep.urls or not repo.startswith("https://github.com/"):
        return UPSTREAMS[name].strip_prefix
    return repo.rsplit("/", 1)[-1] + "-{commit}"  # GitHub names the top folder after the repository


def resolve_commit(name: str, dep, offline: bool, previous: LockEntry | None) -> tuple[str, list[str]]:
    if dep.commit:
        return dep.commit, []
    if not dep.ref:
        raise PinError(
            f"source.{name}: neither `commit` nor `ref` is set",
            hint=f"set source.{name}.commit (40 hex) or source.{name}.ref (branch or tag)",
        )
    if refs.is_commit(dep.ref):
        return dep.ref, []
    repo = dep.repo or UPSTREAMS[name].repo
    if offline:
        if previous is not None and previous.ref == dep.ref and previous.repo == repo:
            return previous.commit, [f"offline: ref '{dep.ref}' not re-resolved; using {previous.commit} from the lock"]
        raise FetchError(
            f"offline: cannot resolve ref '{dep.ref}' of {name} without asking {repo}",
            hint="run once without --offline, or pin `commit:` in the profile",
        )
    return refs.resolve_ref(repo, dep.ref), []


def patch_entries(name: str, dep, profile_dir: Path, lock_dir: Path) -> tuple[PatchEntry, ...]:
    entries = []
    for raw in dep.patches:
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else profile_dir / path
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise PinError(
                f"source.{name}.patches: cannot read {path}: {exc.strerror}",
                hint="patch paths are relative to the profile file",
            ) from None
        # Relative to the lock, so a lock committed with its patches works in any checkout.
        entries.append(PatchEntry(_relative(path, lock_dir), hashlib.sha256(data).hexdigest()))
    return tuple(entries)


def record_local(name: str, path: Path) -> tuple[LockEntry, list[str]]:
    """A local checkout used in place of an archive: its HEAD and whether it is dirty."""
    path = path.expanduser()
    if not path.is_dir():
        raise PinError(f"{path}: not a directory", hint="point --xla at a local XLA git checkout")
    from xlatools.gitcmd import run_git

    def run(*args: str) -> str:
        done = run_git(*args, repo=path, needed_for="--xla names a local checkout")
        if done.returncode != 0:
            raise PinError(
                f"{path}: not a git checkout ({done.stderr.strip() or 'git ' + args[0] + ' failed'})",
                hint="point --xla at the root of an XLA git clone",
            )
        return done.stdout

    commit = run("rev-parse", "HEAD").strip()
    dirty = bool(run("status", "--porcelain", "--untracked-files=no").strip())
    notes = []
    if dirty:
        notes.append(
            f"{path} has uncommitted changes: builds from it are NOT reproducible from this lock "
            f"(commit {commit[:12]} plus local edits)"
        )
    entry = LockEntry(
        name=name,
        kind="local",
        commit=commit,
        local_path=str(path.resolve()),
        dirty=dirty,
        resolved_at=utc_now("seconds"),
    )
    return entry, notes


def archive_forms(name: str, dep, tree_forms) -> list[tuple[list[str], str]]:
    """(URL templates, strip prefix template) of each archive to fetch: the profile's (or upstream's
    default) unless the tree names its own, then every other form the tree uses (its own digest)."""
    wanted = []
    if dep.urls or dep.strip_prefix or not tree_forms:
        wanted.append((url_templates(name, dep), strip_prefix_template(name, dep)))
    for form in tree_forms:
        pair = (list(form.urls), form.strip_prefix or UPSTREAMS[name].strip_prefix)
        if pair not in wanted:
            wanted.append(pair)
    return wanted


def resolve_dependency(
    name: str,
    dep,
    *,
    profile_dir: Path,
    lock_dir: Path,
    cache: ArchiveCache,
    offline: bool,
    previous: LockEntry | None,
    reporter: Reporter | None = None,
    tree_forms=(),
) -> Outcome:
    if dep.local_path:
        local = Path(dep.local_path).expanduser()
        entry, notes = record_local(name, local if local.is_absolute() else profile_dir / local)
        return Outcome(entry, "local", tuple(notes))
    commit, notes = resolve_commit(name, dep, offline, previous)
    patches = patch_entries(name, dep, profile_dir, lock_dir)
    archives, sources = [], []
    for index, (templates, prefix_template) in enumerate(archive_forms(name, dep, tree_forms)):
        urls = tuple(expand(template, commit) for template in templates)
        prefix = expand(prefix_template, commit)
        if any(set(urls) & set(a.urls) and a.strip_prefix == prefix for a in archives):
            continue  # the tree fetches one of the profile's mirrors: same archive, same digest
        before = [a for a in (previous.archives if previous and previous.commit == commit else ()) if a.urls == urls]
        sha256, source = _archive_digest(
            name,
            dep.sha256 if index == 0 else None,
            commit,
            list(urls),
            prefix,
            cache,
            offline,
            before[0].sha256 if before else None,
            reporter,
        )
        if before and before[0].sha256 != sha256:
            notes.append(
                f"{name}: the archive of {commit[:12]} changed since the lock was written "
                f"({before[0].sha256[:12]}... -> {sha256[:12]}...); check why before trusting it"
            )
        archives.append(Archive(urls, sha256, prefix))
        sources.append(source)
    main = archives[0]
    entry = LockEntry(
        name=name,
        kind="archive",
        commit=commit,
        repo=dep.repo or (UPSTREAMS[name].repo if dep.ref else None),
        ref=dep.ref,
        urls=main.urls,
        sha256=main.sha256,
        integrity=hex_to_sri(main.sha256),
        strip_prefix=main.strip_prefix,
        patches=patches,
        resolved_at=utc_now("seconds"),
        other_archives=tuple(archives[1:]),
    )
    return Outcome(entry, "download" if "download" in sources else sources[0], tuple(notes))


def _archive_digest(
    name, expected, commit, urls, prefix, cache, offline, previous_sha, reporter: Reporter | None
) -> tuple[str, str]:
    known = expected or cache.remembered_digest(name, commit, urls) or previous_sha
    if known and cache.lookup(known):
        return known, "cache"
    if offline:
        raise FetchError(
            f"offline: no cached archive for {name} at {commit}",
            hint=f"run `xlatools pin resolve` once with network access (cache: {cache.root})",
        )
    from xlatools.pin.download import fetch

    fetched = fetch(
        urls,
        tmp_dir=cache.tmp_dir,
        prefix=prefix,
        commit=commit,
        label=f"{name}-{commit[:12]}",
        expected_sha256=expected,
        reporter=reporter,
    )
    cache.store(fetched.path, fetched.sha256)
    cache.remember(name, commit, urls, fetched.sha256, fetched.url)
    return fetched.sha256, "download"


def read_tree(source_dir: Path | None):
    """(dependency the tree pins, its URL forms, MadeFor) of a JAX tree, or (None, (), None) without one."""
    if source_dir is None:
        return None, (), None
    from xlatools.pin import layouts, worktree
    from xlatools.pin.apply import detect_layout, read_texts

    layout = detect_layout(Path(source_dir))
    texts = read_texts(Path(source_dir), layout.files)
    forms = [layouts.tree_form(layout, source.name, texts) for source in layout.forms]
    return (
        layout.dependency,
        tuple(f for f in forms if f is not None),
        MadeFor(worktree.head(Path(source_dir)), layout.id),
    )


def resolve_profile(
    resolved,
    lock_path: Path,
    reporter: Reporter,
    *,
    offline: bool = False,
    cache: ArchiveCache | None = None,
    source_dir: Path | None = None,
) -> ResolveResult:
    """Resolve every source dependency of a loaded profile into a new Lock (written by the caller).
    With source_dir, the archives are the ones that JAX tree fetches, and the lock records the tree.
    Warnings and download progress go to `reporter`."""
    previous = Lock(lock_path)
    if lock_path.exists():
        try:
            previous = load_lock(lock_path)
        except PinError as exc:  # resolve is how a broken or outdated lock gets repaired
            reporter.warn(f"{exc.message}; it will be replaced")
    deps = {name: getattr(resolved.profile.source, name) for name in ("jax", "xla", "tensorflow")}
    deps = {name: dep for name, dep in deps.items() if dep is not None}
    if not deps:
        raise PinError(
            f"profile '{resolved.profile.name}' has no source.xla, source.jax or source.tensorflow",
            hint="add e.g. `source: {xla: {commit: <40 hex>}}` to the profile (see docs/pinning.md)",
        )
    cache = cache or ArchiveCache.default()
    tree_dependency, tree_forms, made_for = read_tree(source_dir)
    # The lock follows the profile; only a local checkout recorded by `pin local` outlives it.
    kept = {name: e for name, e in previous.entries.items() if e.kind == "local" and name not in deps}
    dropped = sorted(set(previous.entries) - set(deps) - set(kept))
    lock = Lock(lock_path, kept, _relative(resolved.path, lock_path.parent), made_for=made_for or previous.made_for)
    outcomes = []
    for name, dep in deps.items():
        outcome = resolve_dependency(
            name,
            dep,
            profile_dir=resolved.path.parent,
            lock_dir=lock_path.parent,
            cache=cache,
            offline=offline,
            previous=previous.get(name),
            reporter=reporter,
            tree_forms=tree_forms if name == tree_dependency else (),
        )
        for note in outcome.notes:
            reporter.warn(note)
        lock = lock.with_entry(outcome.entry)
        outcomes.append(outcome)
    changed = not lock_path.exists() or _comparable(previous) != _comparable(lock)
    return ResolveResult(lock, tuple(outcomes), dropped, changed)


def _comparable(lock: Lock) -> Lock:
    """A lock without what re-resolving the same pin changes (resolution times, the generator)."""
    from dataclasses import replace

    entries = {name: replace(entry, resolved_at=None) for name, entry in lock.entries.items()}
    return replace(lock, path=None, entries=entries, generator=None)


def _relative(path: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()
    except ValueError:  # another drive
        return str(path)
