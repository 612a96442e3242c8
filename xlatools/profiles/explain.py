"""Provenance view of a resolved profile: every value set by a file, with file:line."""

from __future__ import annotations

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
