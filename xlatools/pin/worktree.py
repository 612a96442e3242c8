"""A JAX tree as a git checkout: its HEAD, and edits to pin files that `pin apply` would overwrite.

Uncommitted changes to a pin file are either ours (what the last `pin apply` wrote, recorded by
digest under the checkout's git directory, never in the work tree) or someone's hand edits (a
hand-set XLA_COMMIT, an extra mirror URL). `apply` refuses to overwrite the latter without --force.
Trees that are not git checkouts cannot be told apart and are not checked.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

RECORD = "xlatools-pin-applied.json"  # in the git directory: {relative path: sha256 of what apply wrote}
MAX_LINES = 6


def _git(source: Path, *args: str) -> subprocess.CompletedProcess | None:
    """git in a JAX tree, or None where there is no git or the tree is not a checkout (nothing to compare)."""
    from xlatools.gitcmd import have_git, run_git

    if not have_git() or not (source / ".git").exists():
        return None
    return run_git(*args, repo=source)


def head(source: Path) -> str | None:
    done = _git(source, "rev-parse", "HEAD")
    return done.stdout.strip() if done is not None and done.returncode == 0 else None


def _record_path(source: Path) -> Path | None:
    done = _git(source, "rev-parse", "--git-path", RECORD)
    if done is None or done.returncode != 0:
        return None
    path = Path(done.stdout.strip())
    return path if path.is_absolute() else source / path


def _recorded(source: Path) -> dict[str, str]:
    path = _record_path(source)
    try:
        data = json.loads(path.read_text()) if path is not None and path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def hand_edits(source: Path, names: list[str]) -> dict[str, list[str]]:
    """Pin files with uncommitted changes apply did not make: name -> the changed lines (a few)."""
    found = {}
    recorded = _recorded(source)
    for name in names:
        path = source / name
        diff = _git(source, "diff", "--no-color", "-U0", "HEAD", "--", name)
        if diff is None or diff.returncode != 0 or not diff.stdout.strip():
            continue
        if path.is_file() and recorded.get(name) == hashlib.sha256(path.read_bytes()).hexdigest():
            continue
        lines = [line for line in diff.stdout.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        found[name] = lines[:MAX_LINES] + ([f"... {len(lines) - MAX_LINES} more"] if len(lines) > MAX_LINES else [])
    return found


def record_written(source: Path, written: dict[str, bytes]) -> None:
    """Remember what apply wrote, so the next apply knows those changes are its own."""
    from xlatools.fsutil import atomic_write_text

    path = _record_path(source)
    if path is None or not path.parent.is_dir():
        return
    data = {**_recorded(source), **{name: hashlib.sha256(d).hexdigest() for name, d in written.items()}}
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
