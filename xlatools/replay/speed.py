"""Which interpreter runs a module slower (pure): the test run against each --reference-python run, by the
fastest of each run's timed executions (`--iterations N`; the minimum moves least on a loaded machine)."""

from __future__ import annotations

from xlatools.records.replay import ModuleRecord, RunRecord, RunSpeed, SpeedComparison

MARGIN = 1.1  # a ratio up to this is "about the same": one machine's noise, not a finding
STEADY = 5  # fewer executions than this per run: the comparison says it is rough


def _speed(run: RunRecord) -> RunSpeed | None:
    if run.failure or run.run_s is None or run.run_s.min <= 0:
        return None
    jaxlib = run.versions.jaxlib if run.versions else None
    return RunSpeed(
        label=run.label,
        python=run.python,
        jaxlib=jaxlib,
        min_s=run.run_s.min,
        median_s=run.run_s.median,
        count=run.run_s.count,
    )


def compare_speed(module: ModuleRecord) -> SpeedComparison | None:
    """The module's speed on each interpreter, when the test and at least one --reference-python ran it."""
    runs = [
        s
        for run in module.runs
        if run.label == "test" or run.label.startswith(("reference-python-", "reference-jax-"))
        if (s := _speed(run))
    ]
    if len(runs) < 2 or runs[0].label != "test":
        return None
    slowest = max(runs, key=lambda s: s.min_s)
    fastest = min(runs, key=lambda s: s.min_s)
    ratio = round(slowest.min_s / fastest.min_s, 3)
    fewest = min(s.count for s in runs)
    note = (
        f"{fewest} execution(s) per run: a rough comparison (replay with --iterations 20 for a steadier one)"
        if fewest < STEADY
        else None
    )
    return SpeedComparison(
        runs=runs,
        slowest=slowest.label,
        fastest=fastest.label,
        ratio=ratio,
        slower=slowest.label if ratio > MARGIN else None,
        margin=MARGIN,
        note=note,
    )


def speed_cell(module: ModuleRecord) -> str:
    """The table's `slower` column: `test (jaxlib 0.10.2) 7.10x`, `same (1.04x)`, or `-`; `, rough` when
    a run timed fewer than STEADY executions."""
    speed = module.speed
    if speed is None:
        return "-"
    rough = ", rough" if speed.note else ""
    if speed.slower is None:
        return f"same ({speed.ratio:.2f}x{rough})"
    jaxlib = next((s.jaxlib for s in speed.runs if s.label == speed.slower and s.jaxlib), None)
    return f"{speed.slower}{f' (jaxlib {jaxlib})' if jaxlib else ''} {speed.ratio:.2f}x{rough}"
