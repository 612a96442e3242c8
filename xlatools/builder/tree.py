"""Getting the source tree ready before the build command runs: the profile's
managed block in `.bazelrc.user`, and the lock's XLA pin (applied, then verified).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlatools.errors import EnvironmentMissing, Problem, UsageError


@dataclass(frozen=True)
class TreeChanges:
    bazelrc_action: str  # "added", "replaced", "unchanged"
    bazelrc_imported: bool  # whether the tree's .bazelrc reads .bazelrc.user
    pin_changed: tuple[str, ...] = ()
    pin_diff: str = ""


def pin_modules():
    """The pinning API (issue 4), imported late: it may not be installed."""
    try:
        from xlatools.pin.apply import apply_lock
        from xlatools.pin.lock import load_lock
        from xlatools.pin.verify import verify_tree
    except ImportError as exc:
        raise EnvironmentMissing(
            f"--lock needs xlatools' pinning module, which this installation lacks ({exc})",
            hint="install an xlatools with `xlatools pin`, or build without --lock",
        ) from None
    return load_lock, apply_lock, verify_tree


def load_lock_file(path: Path):
    load_lock, _, _ = pin_modules()
    if not Path(path).is_file():
        raise UsageError(f"--lock {path}: no such file", hint="create one with `xlatools pin lock`")
    return load_lock(Path(path))


def lock_local_xla(lock) -> Path | None:
    """A local XLA checkout named by the lock (entry `local_path`), if any."""
    entry = getattr(lock, "xla", None)
    path = getattr(entry, "local_path", None) if entry is not None else None
    return Path(path).expanduser() if path else None


def lock_summary(lock, path: Path | None) -> dict[str, Any] | None:
    """What the manifest records about the pin."""
    if lock is None:
        return None
    if hasattr(lock, "to_json"):
        data = lock.to_json()
    elif hasattr(lock, "model_dump"):
        data = lock.model_dump(mode="json")
    else:
        import dataclasses

        data = dataclasses.asdict(lock) if dataclasses.is_dataclass(lock) else {"repr": repr(lock)}
    return {"lock_file": str(path) if path else None, "lock": data}


def apply_pin(lock, source: Path, dry_run: bool) -> tuple[tuple[str, ...], str]:
    """Apply the lock to the tree, then verify it; refuse (exit 2) if they disagree."""
    _, apply_lock, verify_tree = pin_modules()
    result = apply_lock(lock, source, dry_run=dry_run)
    changed = tuple(str(p) for p in getattr(result, "changed", ()) or ())
    diff = getattr(result, "diff", "") or ""
    if not dry_run:
        problems = verify_tree(lock, source)
        if problems:
            raise UsageError(
                f"{source}: the XLA pin does not match the lock after applying it",
                problems=[Problem(str(p)) for p in problems],
                hint="run `xlatools pin verify` for details; fix the tree or regenerate the lock",
            )
    return changed, diff


def write_bazelrc_block(source: Path, config_name: str, rendered: str, dry_run: bool) -> TreeChanges:
    from xlatools.bazelrc import imports_user_rc, update_block
    from xlatools.fsutil import atomic_write_text

    target = source / ".bazelrc.user"
    existing = target.read_text(encoding="utf-8") if target.exists() else ""
    update = update_block(existing, config_name, rendered, file_label=str(target))
    workspace_rc = source / ".bazelrc"
    imported = workspace_rc.is_file() and imports_user_rc(workspace_rc.read_text(encoding="utf-8", errors="replace"))
    if update.changed and not dry_run:
        atomic_write_text(target, update.text)
    return TreeChanges(update.action, imported)
