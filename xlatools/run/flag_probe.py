"""Which XLA flags a target accepts: jaxlib's flag table where it decides, else one start of the
frontend with the flags (its abort names the unknown ones), cached per interpreter like the probe."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.run.flags import bad_value_from_abort, table_verdict, unknown_from_abort
from xlatools.run.frontends import SPECS
from xlatools.run.target import ProbedInterpreter, _probe_env, _run_probe
from xlatools.run.target_cache import TargetCache

if TYPE_CHECKING:
    from xlatools.console import Reporter


def _flag_cache_key(target: ProbedInterpreter, variable: str) -> str:
    return "flags" if (target.frontend, variable) == ("jax", "XLA_FLAGS") else f"flags:{target.frontend}:{variable}"


def _known_verdict(
    target: ProbedInterpreter, known: dict[str, bool], variable: str, name: str
) -> tuple[bool | None, str]:
    """The verdict on `name` from the table (jaxlib's XLA_FLAGS only) or the cache, if either decides."""
    if SPECS[target.frontend].uses_flag_table and variable == "XLA_FLAGS":
        verdict = table_verdict(name, target.jaxlib)
        if verdict is not None:
            return verdict, "table"
    return known.get(name), "cache"


def unknown_flags(
    target: ProbedInterpreter,
    names_to_flags: dict[str, str],
    timeout: float = 120,
    variable: str = "XLA_FLAGS",
    reporter: Reporter | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The flag names `target` does not accept in `variable`, and how each verdict was reached ("table", "probe", "cache").

    The flag table covers jaxlib's XLA_FLAGS only; other frontends' flags are probed once and cached."""
    cache = TargetCache.load(target.python)
    verdicts: dict[str, bool] = {}
    how: dict[str, str] = {}
    unsure: dict[str, str] = {}
    cache_key = _flag_cache_key(target, variable)
    known = cache.flags.get(cache_key, {})
    for name, flag in names_to_flags.items():
        verdict, source = _known_verdict(target, known, variable, name)
        if verdict is not None:
            verdicts[name], how[name] = verdict, source
        else:
            unsure[name] = flag
    if unsure:
        if reporter:
            reporter.step(
                f"checking {variable} flag(s) {', '.join(unsure.values())} with {target.described} "
                "(not decided by the table)"
            )
        probed = _probe_flags(target, unsure, timeout, variable)
        for name, verdict in probed.items():
            verdicts[name], how[name] = verdict, "probe"
        if target.stamp_origin:
            cache.remember_flags(cache_key, probed, target.stamp_files)
    return sorted(name for name, ok in verdicts.items() if not ok), how


def probe_together(
    target: ProbedInterpreter,
    by_variable: dict[str, dict[str, str]],
    timeout: float = 120,
    reporter: Reporter | None = None,
) -> None:
    """One frontend start for the undecided flags of several variables (TensorFlow: XLA_FLAGS and
    TF_XLA_FLAGS): if it starts with all of them, each is cached as accepted. If not, nothing is
    cached and unknown_flags sorts them out variable by variable. Saves a start (seconds) per run."""
    cache = TargetCache.load(target.python)
    undecided = {}
    for variable, flags in by_variable.items():
        known = cache.flags.get(_flag_cache_key(target, variable), {})
        rest = {name: flag for name, flag in flags.items() if _known_verdict(target, known, variable, name)[0] is None}
        if rest:
            undecided[variable] = rest
    if len(undecided) < 2 or not target.stamp_origin:
        return
    listed = "; ".join(f"{variable} {', '.join(flags.values())}" for variable, flags in undecided.items())
    if reporter:
        reporter.step(f"checking {listed} with {target.described} (one start for all)")
    env = _probe_env("cpu", target.frontend, {variable: list(flags.values()) for variable, flags in undecided.items()})
    if _run_probe(target.python, ["--devices", "--frontend", target.frontend], env, timeout).proc.returncode != 0:
        return
    for variable, flags in undecided.items():
        cache.remember_flags(_flag_cache_key(target, variable), {name: True for name in flags}, target.stamp_files)


def _refuse_crashing(target: ProbedInterpreter, flags: dict[str, str], returncode: int, crashes, variable: str) -> None:
    """The frontend died by a signal with these flags: name the flags it dies with, one start each (XLA knows
    them; the build crashes using them, e.g. TensorFlow 2.21 with --xla_dump_hlo_snapshots)."""
    from xlatools.proctree import signal_name

    culprits = [flag for flag in flags.values() if crashes({"one": flag})] if len(flags) > 1 else list(flags.values())
    if not culprits:
        return  # only together: left to the caller's general message
    how = signal_name(returncode) or f"exit {returncode}"
    raise UsageError(
        f"{target.described} at {target.python} crashes ({how}) at start-up with {variable} "
        f"{', '.join(culprits)}: XLA knows the flag, this build dies using it",
        hint="leave it out (a preset without it, e.g. --preset dump:passes --preset dump:proto instead of "
        "dump:full), or use another --python",
    )


def _probe_flags(target: ProbedInterpreter, flags: dict[str, str], timeout: float, variable: str) -> dict[str, bool]:
    """Start the frontend's XLA backend on the CPU with `flags` in `variable` and read which ones XLA refuses."""
    python = target.python

    def attempt(subset: dict[str, str]) -> tuple[bool, list[str] | None, str, int]:
        env = _probe_env("cpu", target.frontend, {variable: list(subset.values())})
        proc = _run_probe(python, ["--devices", "--frontend", target.frontend], env, timeout).proc
        if proc.returncode == 0:
            return True, [], "", 0
        return False, unknown_from_abort(proc.stderr, variable), proc.stderr, proc.returncode

    ok, unknown, stderr, returncode = attempt(flags)
    if ok:
        return {name: True for name in flags}
    refused = bad_value_from_abort(stderr)
    if unknown is None and refused is not None:
        name, value, kind = refused
        flag = flags.get(name, f"--{name}={value}")
        raise UsageError(
            f"XLA refuses the value of {flag}: {value!r} is not a{' ' + kind if kind else ' valid value'} for --{name}",
            hint=f"fix the value (`{variable}=--help` and starting {target.frontend} "
            "prints the flags XLA knows, with their types)",
        )
    if unknown is None and returncode < 0:
        _refuse_crashing(target, flags, returncode, lambda subset: attempt(subset)[3] < 0, variable)
    if unknown is None:
        lines = [line for line in stderr.strip().splitlines() if not line.startswith("\t--")]  # no flag table
        tail = " | ".join(lines[-2:])[:500]
        raise EnvironmentMissing(
            f"cannot tell whether {python} accepts {', '.join(flags.values())}: the probe failed: {tail}",
            hint=f"run it by hand: {variable}=... {python} (start {target.frontend} and compile something)",
        )
    verdicts = {name: name not in unknown for name in flags}
    rest = {name: flag for name, flag in flags.items() if verdicts[name]}
    if rest and not attempt(rest)[0]:  # confirm the others really start
        raise EnvironmentMissing(
            f"{python} refuses {variable} flags {', '.join(rest.values())} for a reason other than an unknown flag"
        )
    return verdicts
