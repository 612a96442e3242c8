"""What a bisection's test is made of, beyond its command line (which the spec holds): the program's file,
a module's file (`-m pkg.mod` found under the working folder), a repro pack, and the files its arguments
name (`check.py expected.npy`, `--ref=data.json`). Recorded when a bisection starts; a resumed bisection
compares them, because verdicts of another test must not be mixed into its search.

A file an argument names counts as changed only when it changed after the bisection last saved its state:
one written while steps ran is the test's own output (`--log out.txt`), not an edit. Program, module and
pack files count whenever their content differs.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.records.bisect import TestFile

if TYPE_CHECKING:
    from xlatools.bisect.checks import ProgramTest, ReplayTest

HASH_LIMIT = 256 * 1024 * 1024  # bigger files are recorded by size only: hashing them would slow every resume
OWN_FILES = ("program", "module", "pack")


def _record(role: str, path: Path) -> TestFile:
    from xlatools.fsutil import sha256_file

    try:
        size = path.stat().st_size
        if size > HASH_LIMIT:
            return TestFile(role=role, path=str(path), size=size, note="not hashed: over 256 MiB")
        return TestFile(role=role, path=str(path), sha256=sha256_file(path), size=size)
    except OSError as exc:
        return TestFile(role=role, path=str(path), note=f"cannot be read: {exc.strerror}")


def _module_file(name: str, cwd: Path) -> Path | None:
    """`-m pkg.mod` as a file under the working folder (pkg/mod.py, pkg/mod/__main__.py); None for an
    installed module (its version is the environment's business)."""
    base = cwd.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__main__.py", base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _named_files(args: tuple[str, ...] | list[str], cwd: Path) -> list[Path]:
    """Regular files the arguments name (a word, or the value of --opt=VALUE), each once."""
    found: list[Path] = []
    for arg in args:
        for word in {arg, arg.partition("=")[2]} - {""}:
            if len(word) > 4096 or "\0" in word:
                continue
            path = Path(word).expanduser()
            path = path if path.is_absolute() else cwd / path
            try:
                if path.is_file() and path not in found:
                    found.append(path)
            except OSError:
                continue
    return found


def files_of_test(test: ProgramTest | ReplayTest) -> list[TestFile]:
    """The files of the test, as they are now."""
    pack = getattr(test, "pack", None)
    if pack is not None:
        return [_record("pack", Path(pack))]
    program = test.program  # type: ignore[union-attr]
    cwd = Path(test.opts.cwd)  # type: ignore[union-attr]
    files: list[TestFile] = []
    if program.kind == "script":
        files.append(_record("program", Path(program.name)))
    elif program.kind == "module":
        found = _module_file(program.name, cwd)
        if found is not None:
            files.append(_record("module", found))
    files += [_record("argument", p) for p in _named_files(program.args, cwd)]
    return files


def _seconds(stamp: str | None) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None
    except ValueError:
        return None


def changes(recorded: list[TestFile], now: list[TestFile], saved: str | None) -> list[str]:
    """What differs between the recorded files and the present ones, one phrase each ([] when the test is the
    same). `saved`: when the state was last written (an argument's file changed before it is the test's own
    output)."""
    since = _seconds(saved)
    before = {(f.role, f.path): f for f in recorded}
    after = {(f.role, f.path): f for f in now}
    found = []
    for key, old in before.items():
        new = after.get(key)
        name = f"{old.path} ({old.role})"
        if new is None:
            found.append(f"{name}: no longer part of the test")
        elif (old.sha256, old.size) != (new.sha256, new.size):
            if old.role not in OWN_FILES and since is not None and not _changed_since(Path(old.path), since):
                continue  # written by the steps themselves
            found.append(f"{name}: {'content differs' if new.sha256 or old.sha256 else 'size differs'}")
    for key, new in after.items():
        if key in before or (
            new.role not in OWN_FILES and since is not None and not _changed_since(Path(new.path), since)
        ):
            continue  # an argument's file made by the steps themselves
        found.append(f"{new.path} ({new.role}): new")
    return found


def _changed_since(path: Path, since: float) -> bool:
    try:
        return os.stat(path).st_mtime > since
    except OSError:
        return True
