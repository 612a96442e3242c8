"""Where profiles are found.

Order: XLATOOLS_PROFILE_PATH (colon separated), ./configs, the user config dir,
the profiles shipped inside the package. A profile's name is its file name
without .yaml/.yml. The same name in two places is an error, not a silent
shadowing: a build must not depend on which directory happens to come first.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import Problem, ProfileError, UsageError

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "configs"
SUFFIXES = (".yaml", ".yml")


def user_profile_dir() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("xlatools")) / "profiles"


def search_dirs() -> list[Path]:
    dirs: list[Path] = []
    for part in os.environ.get("XLATOOLS_PROFILE_PATH", "").split(os.pathsep):
        if part:
            dirs.append(Path(part).expanduser())
    dirs += [Path.cwd() / "configs", user_profile_dir(), SHIPPED_DIR]
    unique: list[Path] = []
    seen: set[Path] = set()
    for directory in dirs:
        # ./configs in a checkout of xlatools is the shipped directory itself.
        real = directory.resolve()
        if real not in seen:
            seen.add(real)
            unique.append(directory)
    return unique


@dataclass(frozen=True)
class ProfileFile:
    name: str
    path: Path


def discover(dirs: list[Path] | None = None) -> dict[str, list[ProfileFile]]:
    """Every profile file on the search path, by name, in search order."""
    found: dict[str, list[ProfileFile]] = {}
    for directory in search_dirs() if dirs is None else dirs:
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            if path.suffix in SUFFIXES and path.is_file():
                found.setdefault(path.stem, []).append(ProfileFile(path.stem, path))
    return found


def duplicate_problem(name: str, files: list[ProfileFile]) -> Problem:
    places = ", ".join(str(f.path) for f in files)
    return Problem(
        f"profile '{name}' is defined more than once on the search path: {places}",
        file=str(files[0].path),
        hint="rename one of them; a profile can build on another with `extends:`",
    )


def is_path_ref(ref: str) -> bool:
    return ref.endswith(SUFFIXES) or os.sep in ref or ref.startswith(".")


def locate(ref: str, near: Path | None = None) -> ProfileFile:
    """Find a profile by name or path. `near` is the directory of a profile that
    extends `ref`: its own directory is looked at first."""
    if is_path_ref(ref):
        path = Path(ref).expanduser()
        if near is not None and not path.is_absolute():
            path = near / path
        if not path.is_file():
            raise UsageError(f"profile file not found: {path}", hint="check the path, or give a profile name")
        return ProfileFile(path.stem, path)
    if near is not None:
        for suffix in SUFFIXES:
            candidate = near / f"{ref}{suffix}"
            if candidate.is_file():
                return ProfileFile(ref, candidate)
    found = discover()
    files = found.get(ref)
    if not files:
        close = difflib.get_close_matches(ref, list(found), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        dirs = ", ".join(str(d) for d in search_dirs())
        raise UsageError(
            f"no profile named '{ref}'",
            hint=f"{hint}`xlatools profiles list` shows the available ones; searched: {dirs}",
        )
    if len(files) > 1:
        raise ProfileError(f"profile '{ref}' is ambiguous", problems=[duplicate_problem(ref, files)])
    return files[0]
