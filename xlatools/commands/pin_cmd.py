"""`xlatools pin ...`: pin XLA (or TensorFlow) by commit and verified sha256, apply, verify."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import DryRunOption, JsonOption, ProfileOption

app = typer.Typer(
    help="Pin XLA (and TensorFlow for old JAX) by commit and verified sha256; apply the pin to a JAX tree.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

_LOCK_HELP = "Lock file (default: ./xlatools.lock)."


def _lock_path(lock: Optional[Path]) -> Path:
    from xlatools.pin.lock import DEFAULT_LOCK_NAME

    return lock if lock is not None else Path.cwd() / DEFAULT_LOCK_NAME


def _emit_json(payload) -> None:
    typer.echo(json.dumps(payload, indent=2))


@app.command("resolve")
def resolve(
    profile: ProfileOption,
    lock: Optional[Path] = typer.Option(
        None, "--lock", help="Lock file to write (default: xlatools.lock next to the profile)."
    ),
    offline: bool = typer.Option(False, "--offline", help="Use the archive cache only; no network."),
    # Not the shared --dry-run: resolving downloads the archives (into the cache) to know their digests.
    dry_run: bool = typer.Option(False, "--dry-run", help="Resolve and download, but do not write the lock."),
    source: Optional[Path] = typer.Option(
        None, "--source", help="JAX tree the lock is for: its URL forms are fetched, its commit recorded."
    ),
    as_json: JsonOption = False,
) -> None:
    """Resolve source.xla (and source.jax / source.tensorflow) to commits and verified archives; write the lock."""
    from xlatools import console
    from xlatools.pin.lock import write_lock
    from xlatools.pin.resolve import resolve_profile
    from xlatools.profiles import load

    resolved = load(profile)
    lock_path = lock if lock is not None else default_lock_for(resolved.path)
    result = resolve_profile(resolved, lock_path, console.COMMAND, offline=offline, source_dir=source)
    if result.changed and not dry_run:
        write_lock(result.lock)
    if as_json:
        _emit_json(
            {
                "lock": str(lock_path),
                "written": result.changed and not dry_run,
                "dry_run": dry_run,
                "dropped": result.dropped,
                "dependencies": {o.entry.name: {**o.entry.to_json(), "source": o.source} for o in result.outcomes},
            }
        )
        return
    for outcome in result.outcomes:
        entry = outcome.entry
        digest = f"sha256 {entry.sha256}" if entry.sha256 else ("dirty" if entry.dirty else "clean")
        console.info(f"{entry.name}: {entry.commit} {digest} ({outcome.source})")
    for name in result.dropped:
        console.info(f"{name}: no longer in the profile, {'would be ' if dry_run else ''}dropped from the lock")
    state = "would be written" if dry_run else ("written" if result.changed else "unchanged")
    console.info(f"lock {lock_path}: {state}")


def default_lock_for(profile_path: Path) -> Path:
    """xlatools.lock next to the profile, unless it is a profile shipped inside the package."""
    from xlatools.pin.lock import DEFAULT_LOCK_NAME
    from xlatools.profiles.search import SHIPPED_DIR

    if profile_path.resolve().parent == SHIPPED_DIR.resolve():
        return Path.cwd() / DEFAULT_LOCK_NAME
    return profile_path.parent / DEFAULT_LOCK_NAME


@app.command("apply")
def apply(
    source: Path = typer.Option(..., "--source", help="Root of the JAX source tree to update in place."),
    lock: Optional[Path] = typer.Option(None, "--lock", help=_LOCK_HELP),
    dry_run: DryRunOption = False,
    force: bool = typer.Option(False, "--force", help="Replace uncommitted hand edits to the pin files."),
    as_json: JsonOption = False,
) -> None:
    """Write the lock's pin into a JAX tree (revision.bzl + MODULE.bazel, workspace.bzl, or WORKSPACE).

    --dry-run prints the unified diff."""
    from xlatools import console
    from xlatools.pin.apply import apply_lock
    from xlatools.pin.lock import load_lock

    result = apply_lock(load_lock(_lock_path(lock)), source, dry_run=dry_run, force=force)
    for warning in result.warnings:
        console.warn(warning)
    if as_json:
        _emit_json(
            {
                "ok": True,
                "layout": result.layout,
                "dry_run": dry_run,
                "changed": [str(p) for p in result.changed],
                "diff": result.diff,
                "warnings": result.warnings,
                "replaced_edits": result.replaced,
            }
        )
        return
    if dry_run:
        typer.echo(result.diff, nl=False)
    verb = "would change" if dry_run else "changed"
    if result.changed:
        console.info(
            f"layout {result.layout}: {verb} {len(result.changed)} file(s): "
            + ", ".join(str(p) for p in result.changed)
        )
    else:
        console.info(f"layout {result.layout}: already up to date")


@app.command("verify")
def verify(
    source: Optional[Path] = typer.Option(None, "--source", help="JAX tree to check against the lock."),
    lock: Optional[Path] = typer.Option(None, "--lock", help=_LOCK_HELP),
    refetch: bool = typer.Option(
        False, "--refetch", help="Download each archive again (no cache) and check its sha256."
    ),
    as_json: JsonOption = False,
) -> None:
    """Check the lock, the tree (--source) and the archives (--refetch) agree. Exit 1 on any disagreement."""
    from xlatools import console
    from xlatools.errors import Problem, VerifyFailed
    from xlatools.pin.lock import load_lock
    from xlatools.pin.verify import verify_archives, verify_lock, verify_tree

    lock_file = load_lock(_lock_path(lock))
    found = verify_tree(lock_file, source) if source is not None else verify_lock(lock_file)
    found += verify_archives(lock_file, refetch, reporter=console.COMMAND)
    if as_json:
        _emit_json(
            {
                "lock": str(lock_file.path),
                "source": str(source) if source else None,
                "refetch": refetch,
                "ok": not found,
                "disagreements": found,
            }
        )
    if found:
        failure = VerifyFailed(
            f"{len(found)} disagreement(s) with {lock_file.path}",
            problems=[Problem(text) for text in found],
            hint="`xlatools pin apply --source DIR` rewrites the tree's pinned values from the "
            "lock; a changed archive needs `xlatools pin resolve` and a look at why",
        )
        failure.reported_json = as_json  # the JSON result above says what failed; stdout stays one document
        raise failure
    if not as_json:
        checked = ["lock"] + (["tree"] if source else []) + (["archives (refetched)"] if refetch else [])
        console.info(f"ok: {', '.join(checked)} agree with {lock_file.path}")


@app.command("local")
def local(
    xla: Path = typer.Option(..., "--xla", help="A local XLA git checkout to build against instead of an archive."),
    lock: Optional[Path] = typer.Option(None, "--lock", help=_LOCK_HELP),
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
) -> None:
    """Record a local XLA checkout (HEAD, dirty state); builds pass it as --local_xla_path.

    --dry-run shows the entry without writing the lock."""
    from xlatools import console
    from xlatools.pin.lock import Lock, load_lock, write_lock
    from xlatools.pin.resolve import record_local

    lock_path = _lock_path(lock)
    previous = load_lock(lock_path) if lock_path.exists() else Lock(lock_path)
    entry, notes = record_local("xla", xla)
    for note in notes:
        console.warn(note)
    if not dry_run:
        write_lock(previous.with_entry(entry))
    if as_json:
        _emit_json({"lock": str(lock_path), "written": not dry_run, "xla": entry.to_json()})
        return
    state = "would record" if dry_run else "recorded"
    console.info(
        f"{state} xla = local checkout {entry.local_path} at {entry.commit}"
        f"{' (dirty)' if entry.dirty else ''} in {lock_path}"
    )
    console.info(
        f"builds pass --local_xla_path={entry.local_path} "
        "(bazel --override_repository=xla=... and --override_module=xla=...)"
    )
