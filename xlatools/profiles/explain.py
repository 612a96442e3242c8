"""Provenance view of a resolved profile: every value set by a file, with file:line."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from xlatools.profiles.loader import ResolvedProfile, format_key


def _leaves(value: Any, path: tuple) -> Iterator[tuple[tuple, Any]]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaves(child, path + (key,))
    elif isinstance(value, list) and value and any(isinstance(item, (dict, list)) for item in value):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))
    else:
        yield path, value


def explain_rows(resolved: ResolvedProfile) -> list[tuple[str, Any, str]]:
    """(key path, value, origin) for each value a profile file set; defaults are left out."""
    rows = []
    for path, value in _leaves(resolved.profile.model_dump(mode="json"), ()):
        origin = resolved.origins.get(path)
        if origin is None:
            continue
        if isinstance(value, list):
            # Lists of scalars: one row per item, since items may come from different files.
            for index, item in enumerate(value):
                item_origin = resolved.origins.get(path + (index,), origin)
                rows.append((f"{format_key(path)}[{index}]", item, str(item_origin)))
        else:
            rows.append((format_key(path), value, str(origin)))
    return rows


def origin_roots() -> list[tuple[str, Path]]:
    """(label, folder) for shortening origins, most specific first: the shipped profiles, the user's
    profile folder, XLATOOLS_PROFILE_PATH entries, the working directory, the home directory."""
    import os

    from xlatools.profiles.search import SHIPPED_DIR, user_profile_dir

    roots = [("<shipped>", SHIPPED_DIR), ("<user>", user_profile_dir())]
    entries = [p for p in os.environ.get("XLATOOLS_PROFILE_PATH", "").split(os.pathsep) if p]
    roots += [(f"<path{i}>" if len(entries) > 1 else "<path>", Path(p).expanduser()) for i, p in enumerate(entries, 1)]
    roots += [(".", Path.cwd()), ("~", Path.home())]
    return [(label, folder.resolve()) for label, folder in roots]


def short_origin(origin: str, roots: list[tuple[str, Path]]) -> tuple[str, str | None]:
    """`/long/…/configs/dbg-cpu.yaml:4` -> (`<shipped>/dbg-cpu.yaml:4`, the label used or None).
    The line number and file name are always kept; only the folder is abbreviated."""
    file, sep, line = origin.rpartition(":")
    if not sep or not line.isdigit():
        return origin, None
    path = Path(file).resolve()
    for label, folder in roots:
        try:
            rel = path.relative_to(folder)
        except ValueError:
            continue
        return f"{label}/{rel.as_posix()}:{line}", label
    return origin, None


def explain_table(rows: list[tuple[str, str, str]], width: int | None) -> str:
    """key / value / set-in as plain columns within `width` (None: no limit). Key and origin keep
    their full text; only the value column wraps, so the origin is never cut."""
    import textwrap

    header = ("key", "value", "set in")
    key_w = max(len(r[0]) for r in [header, *rows])
    origin_w = max(len(r[2]) for r in [header, *rows])
    longest = max(len(r[1]) for r in [header, *rows])
    value_w = longest if width is None else max(12, min(longest, width - key_w - origin_w - 4))
    lines = []
    for key, value, origin in [header, *rows]:
        parts = textwrap.wrap(value, value_w, break_on_hyphens=False) or [""]
        lines.append(f"{key.ljust(key_w)}  {parts[0].ljust(value_w)}  {origin}")
        lines += [f"{'':{key_w}}  {part}" for part in parts[1:]]
    return "\n".join(lines)
