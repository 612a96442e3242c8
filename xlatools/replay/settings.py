"""The settings of a run that change a module's numbers, carried into its replays and packs.

A module's own types (f64, s64) and the precision attributes jax lowered into it travel inside the
module. What does not: XLA flags of the run that are not dump flags (they change how XLA compiles),
the platform, and the jax variables that chose those types and precisions (kept so a pack says how
its modules were made, and restored in the replay's environment).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from xlatools.run.record import numerics_env


@dataclass
class RunSettings:
    xla_flags: list[str] = field(default_factory=list)  # the run's XLA flags, dump flags left out
    env: dict[str, str] = field(default_factory=dict)  # NUMERICS_ENV variables the program ran with
    platform: str | None = None  # the backend the run used (cpu, cuda, rocm)


def compile_flags(flags: list[str]) -> list[str]:
    """XLA flags that change compilation: everything but the dump flags."""
    return [f for f in flags if not f.split("=", 1)[0].startswith("--xla_dump")]


def of_bundle(bundle: Path) -> RunSettings | None:
    """The settings a run bundle recorded (None for a dump folder or another kind of bundle)."""
    try:
        manifest = json.loads((Path(bundle) / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("kind") != "run":
        return None
    env = manifest.get("numerics_env")
    if env is None:  # bundles older than numerics_env: what xlatools itself set
        env = {c["name"]: c["value"] for c in manifest.get("env_changes") or [] if c.get("value") is not None}
    backend = (manifest.get("jax") or {}).get("backend")
    return RunSettings(compile_flags(manifest.get("xla_flags") or []), numerics_env(env), backend)
