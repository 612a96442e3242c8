"""Profiles: declarative build-and-debug setups in YAML (see configs/)."""

from xlatools.profiles.loader import ResolvedProfile, load

__all__ = ["ResolvedProfile", "load"]
