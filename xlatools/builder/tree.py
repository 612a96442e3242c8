"""Getting the source tree ready before the build command runs: the lock's XLA pin
(applied, then verified) and the profile's managed block in `.bazelrc.user`
(written by `xlatools.bazelrc.write_tree_block`, shared with `xlatools bazelrc`)."""

from __future__ import annotations

from pathlib import Path

from xlatools.errors import Problem, UsageError
from xlatools.pin.lock import Lock
from xlatools.records.build import PinInfo


def load_lock_file(path: Path) -> Lock:
    from xlatools.pin.lock import load_lock

    if not Path(path).is_file():
        raise UsageError(
            f"--lock {path}: no such file",
            hint="create one with `xlatools pin resolve --profile P` (or `xlatools pin local --xla DIR`)",
        )
    return load_lock(Path(path))


def lock_local_xla(lock: Lock) -> Path | None:
    """A local XLA checkout named by the lock (an entry of kind `local`), if any."""
    entry = lock.xla
    return Path(entry.local_path).expanduser() if entry is not None and entry.local_path else None


def lock_summary(lock: Lock | None, path: Path | None) -> PinInfo | None:
    """What the manifest records about the pin."""
    if lock is None:
        return None
    return PinInfo(lock_file=str(path) if path else None, lock=lock.to_json())


def apply_pin(lock: Lock, source: Path, dry_run: bool) -> tuple[tuple[str, ...], str]:
    """Apply the lock to the tree, then verify it; refuse (exit 2) if they disagree."""
    from xlatools.pin.apply import apply_lock
    from xlatools.pin.verify import verify_tree

    result = apply_lock(lock, source, dry_run=dry_run)
    changed = tuple(str(p) for p in result.changed)
    if not dry_run:
        problems = verify_tree(lock, source)
        if problems:
            raise UsageError(
                f"{source}: the XLA pin does not match the lock after applying it",
                problems=[Problem(str(p)) for p in problems],
                hint="run `xlatools pin verify` for details; fix the tree or regenerate the lock",
            )
    return changed, result.diff
