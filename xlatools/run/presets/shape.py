"""A preset definition's types, for the records reader (imported only to check a user's or a profile's
presets: it loads pydantic, which a run reading only the shipped presets never pays for)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import StrictInt


@dataclass
class PresetShape:
    kind: str | None = None
    description: str = ""
    xla_flags: list[str] | None = None
    env: dict[str, str | StrictInt] | None = None
    vmodule: dict[str, StrictInt] | None = None
    min_jaxlib: str | None = None
    max_jaxlib: str | None = None
    frontend: str | None = None
