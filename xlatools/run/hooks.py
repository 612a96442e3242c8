"""The program's environment with xlatools' hooks in its interpreter, in the order they chain: the crash
capture (debug/crash.py), the argument recorder (run/recorder.py) and the observer (run/observer.py), each a
`sitecustomize` that restores PYTHONPATH and imports the next; and what the observer left, for the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xlatools.records.metrics import RunMetrics
    from xlatools.run.plan import RunPlan


def program_env(plan: RunPlan, backend: str | None, env: dict[str, str], bundle: Path) -> dict[str, str]:
    """The environment of a one-process run's program: every hook the plan wants."""
    from xlatools.debug.crash import with_crash_capture  # native-backtrace.txt if it dies by a signal

    return with_crash_capture(recording(plan, backend, observing(plan, env, bundle), bundle), bundle)


def observing(plan: RunPlan, env: dict[str, str], bundle: Path) -> dict[str, str]:
    """`env` with the observer, unless the run measures nothing (--no-metrics, not jax)."""
    from xlatools.run.observer import FOLDER, observer_env

    if plan.measure_calls is None:
        return env
    (bundle / FOLDER).mkdir(exist_ok=True)
    return observer_env(env, bundle, plan.measure_calls, plan.explain_recompiles)


def recording(plan: RunPlan, backend: str | None, env: dict[str, str], bundle: Path) -> dict[str, str]:
    """`env` with the argument recorder where it is wanted (run/recorder.py)."""
    from xlatools.run.recorder import FOLDER, recorder_env, wanted

    if plan.frontend != "jax" or not wanted(plan.record_inputs, plan.xla_flags, backend):
        return env
    (bundle / FOLDER).mkdir(exist_ok=True)
    return recorder_env(env, bundle)


def observed(plan: RunPlan, bundle: Path, one_process: bool) -> RunMetrics | None:
    """What the observer measured, matched to the run's dump (of a one-process run); None: not observed."""
    from xlatools.run.observer import FOLDER, read_metrics

    if plan.measure_calls is None or not (bundle / FOLDER).is_dir():  # not observed (or a Slurm job: not yet)
        return None

    dump = Path(plan.dump_dir) if plan.dump_dir and one_process else None
    return read_metrics(bundle, plan.measure_calls, dump)
