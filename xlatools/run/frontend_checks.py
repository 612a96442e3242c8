"""Before launch: which frontend a run targets, and whether it accepts every flag the plan sets.

XLA aborts the whole process on a flag it does not know, in XLA_FLAGS and, for
TensorFlow, in TF_XLA_FLAGS (the same parser). Both are checked against the
target here, so a bad flag is a usage error (exit 2) before any bundle exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.run.flags import flag_name
from xlatools.run.frontends import SPECS, TF_XLA_FLAGS, check_frontend

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.records.run import ProfileRun
    from xlatools.run.plan import RunPlan, RunRequest
    from xlatools.run.presets.catalog import Catalog
    from xlatools.run.target import ProbedInterpreter


def probe_target(
    request: "RunRequest", profile: "ProfileRun", catalog: "Catalog", platform: str, reporter: "Reporter | None" = None
) -> "ProbedInterpreter":
    """The target, probed as the frontend the run asks for: --frontend, else the profile's run.frontend, else
    the frontend of a chosen frontend preset (`tf-clustering` is TensorFlow's), else the one the probe detects
    (jax first). A target without the asked-for frontend is exit 3 (naming the preset that asked); presets of
    two frontends at once are exit 2, unless --frontend picks one (the other's variables are then only set)."""
    from xlatools.run.target import probe

    explicit = check_frontend(request.frontend, "--frontend") or check_frontend(
        profile.frontend, f"profile {profile.name} run.frontend"
    )
    if explicit:
        return probe(request.python, platform, explicit, reporter=reporter)
    asking = preset_frontends(catalog, [*profile.presets, *request.presets])
    if not asking:
        return probe(request.python, platform, None, reporter=reporter)
    frontend = asking[0][1]
    try:
        return probe(request.python, platform, frontend, reporter=reporter)
    except EnvironmentMissing as exc:
        raise EnvironmentMissing(
            f"--preset {asking[0][0]} is for {frontend} programs, but {exc.message}",
            hint=f"{exc.hint}; or leave the preset out (with --frontend jax it only sets its variables)",
        ) from None


def preset_frontends(catalog: "Catalog", refs: list[str]) -> list[tuple[str, str]]:
    """(preset, frontend) of each chosen preset that asks for a frontend; UsageError when they ask for two."""
    asking = [(ref, preset.frontend) for ref, preset in ((r, catalog.get(r)) for r in refs) if preset.frontend]
    if len({frontend for _, frontend in asking}) > 1:
        named = ", ".join(f"{ref} ({frontend})" for ref, frontend in asking)
        raise UsageError(
            f"the presets ask for different frontends: {named}",
            hint="say which one the program uses with --frontend (the other presets then only set their variables)",
        )
    return asking


class UnknownFlags(UsageError):
    """A flag the target does not know (XLA would abort at start-up): bad input, exit 2."""


def refuse_unknown(
    target: "ProbedInterpreter",
    to_check: dict[str, str],
    sources: dict[str, str],
    variable: str = "XLA_FLAGS",
    reporter: "Reporter | None" = None,
) -> dict[str, str]:
    """How each flag in `to_check` (name -> flag) was found acceptable ("table", "cache", "probe");
    UnknownFlags naming each unknown flag and where it came from (`sources`: flag -> origin)."""
    from xlatools.run.flag_probe import unknown_flags

    if not to_check:
        return {}
    unknown, how = unknown_flags(target, to_check, variable=variable, reporter=reporter)
    if unknown:
        what = "XLA" if variable == "XLA_FLAGS" else variable

        def origin(flag: str) -> str:
            source = sources.get(flag, "?")
            return f"{variable} in the environment" if source == "environment" else source

        named = ", ".join(f"{to_check[n]} (from {origin(to_check[n])})" for n in unknown)
        raise UnknownFlags(
            f"{target.described} at {target.python} does not know {what} flag{'s' if len(unknown) > 1 else ''} "
            f"{named}; XLA would abort at start-up",
            hint="drop it, pick a preset for this version (`xlatools presets list` shows versions), or use another "
            "--python; a flag that takes a value also reads as unknown without one (--xla_dump_hlo_pass_re=.*)",
        )
    return how


def check_flags(target: "ProbedInterpreter", plan: "RunPlan", reporter: "Reporter | None" = None) -> dict[str, str]:
    """How each flag of the plan was found acceptable; UnknownFlags for unknown ones."""
    from xlatools.run.flag_probe import probe_together

    how: dict[str, str] = {}
    layers = [("XLA_FLAGS", plan.xla_flags, plan.xla_flag_sources)]
    if TF_XLA_FLAGS in SPECS[target.frontend].flag_vars:
        layers.append((TF_XLA_FLAGS, plan.tf_xla_flags, plan.tf_xla_flag_sources))
    checks = {
        variable: {flag_name(f): f for f in flags if flag_name(f) != "xla_dump_to"} for variable, flags, _ in layers
    }
    probe_together(target, checks, reporter=reporter)
    for variable, _, sources in layers:
        found = refuse_unknown(target, checks[variable], sources, variable, reporter)
        how.update(found if variable == "XLA_FLAGS" else {f"{variable}:{name}": v for name, v in found.items()})
    return how
