"""The settings of a run that change a module's numbers, carried into its replays and packs.

A module's own types (f64, s64) and the precision attributes jax lowered into it travel inside the
module. What does not: XLA flags of the run that are not dump flags (they change how XLA compiles),
the platform, and the jax variables that chose those types and precisions (kept so a pack says how
its modules were made, and restored in the replay's environment).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from xlatools.records.replay import ReplayRequest
from xlatools.records.run import RunManifest
from xlatools.run.manifest import numerics_env


@dataclass(kw_only=True)
class RunSettings:
    xla_flags: list[str] = field(default_factory=list)  # the run's XLA flags, dump flags left out
    env: dict[str, str] = field(default_factory=dict)  # NUMERICS_ENV variables the program ran with
    platform: str | None = None  # the backend the run used (cpu, cuda, rocm)


def compile_flags(flags: list[str]) -> list[str]:
    """XLA flags that change compilation: everything but the dump flags."""
    return [f for f in flags if not f.split("=", 1)[0].startswith("--xla_dump")]


def of_run(run: RunManifest) -> RunSettings:
    """The settings a run bundle recorded."""
    env = run.numerics_env
    if env is None:  # bundles older than numerics_env: what xlatools itself set
        env = {change.name: change.value for change in run.env_changes if change.value is not None}
    return RunSettings(xla_flags=compile_flags(run.xla_flags), env=numerics_env(env), platform=run.jax.backend)


def of_bundle(bundle: Path) -> RunSettings | None:
    """The settings of the run bundle at `bundle` (None for a bundle of another kind); a damaged
    manifest is bad input (exit 2, naming the file)."""
    from xlatools.records import read_bundle

    record = read_bundle(bundle)
    return of_run(record) if isinstance(record, RunManifest) else None


def adopt_run_settings(request: ReplayRequest, settings: RunSettings | None) -> tuple[ReplayRequest, list[str]]:
    """A run's compile flags and numerics variables go into its replay (the request's own win): the
    request that replays it, and notes that say what was adopted."""
    from xlatools.run.flags import flag_name

    if settings is None:
        return request, []
    own = {flag_name(f) for f in request.xla_flags}
    adopted = [f for f in settings.xla_flags if flag_name(f) not in own]
    env = {**settings.env, **request.env}
    notes = [
        f"the run's {what} ({', '.join(items)}) apply here too"
        for what, items in (
            ("XLA flags", adopted),
            ("numerics variables", [f"{k}={v}" for k, v in settings.env.items() if k not in request.env]),
        )
        if items
    ]
    return replace(request, xla_flags=adopted + list(request.xla_flags), env=env), notes
