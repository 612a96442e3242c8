"""The table of backend switches (switches.yaml) and which of them apply to one jaxlib (pure but for reading it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xlatools.errors import UsageError

TABLE = Path(__file__).with_name("switches.yaml")


@dataclass(frozen=True, kw_only=True)
class Switch:
    name: str
    backend: Literal["cpu", "gpu"]
    flag: str  # the XLA_FLAGS setting, --name=value
    what: str
    jaxlib: str | None = None  # PEP 440 specifier of the releases where the path is on by default
    seen: str | None = None  # measured on a real program
    device: bool = True  # False: never run on that backend's hardware by xlatools' tests

    @property
    def flag_name(self) -> str:
        return self.flag.lstrip("-").split("=", 1)[0]

    def applies(self, backend: str, jaxlib: str | None) -> bool:
        """For `backend`, and for this jaxlib (a jaxlib the specifier cannot read, e.g. a local build, is tried)."""
        if self.backend != backend:
            return False
        if self.jaxlib is None or jaxlib is None:
            return True
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version

        try:
            return Version(Version(jaxlib).base_version) in SpecifierSet(self.jaxlib)
        except InvalidVersion:
            return True


def load(path: Path = TABLE) -> list[Switch]:
    """The table, every entry checked (a broken entry is a bug of ours or a broken user copy: named)."""
    from pydantic import TypeAdapter, ValidationError

    from xlatools.yamlfile import load_file

    data = load_file(path)
    try:
        switches = TypeAdapter(list[Switch]).validate_python((data or {}).get("switches"))
    except (ValidationError, AttributeError) as exc:
        raise UsageError(f"{path}: not a switch table ({str(exc).splitlines()[0]})") from None
    names = [s.name for s in switches]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: a switch name appears twice")
    return switches


def by_name(switches: list[Switch], names: list[str]) -> list[Switch]:
    """The switches `names` picks (--switch), in the table's order; an unknown name is exit 2 with the known ones."""
    known = {s.name for s in switches}
    unknown = [n for n in names if n not in known]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
        raise UsageError(
            f"--switch {unknown[0]}: no such switch" + (f" (did you mean {close[0]}?)" if close else ""),
            hint="the switches: " + ", ".join(sorted(known)),
        )
    return [s for s in switches if s.name in names] if names else switches
