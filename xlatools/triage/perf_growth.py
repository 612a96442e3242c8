"""The growth stage of a metric triage: the compiled modules of last good and first bad, by name, compared on
xlatools' own per-module metrics (the runs' `metrics`: temp bytes from memory_analysis, compile seconds, the
fastest timed call); the module that grew most on the triage's metric (on temp bytes, compile or call time
when the triage's metric is not a module's) comes first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.errors import EXIT_MISSING
from xlatools.records.triage_perf import GrowthFound, ModuleGrowth
from xlatools.triage.stages import StageProblem
from xlatools.vocab import StageStatus

if TYPE_CHECKING:
    from xlatools.triage.perf import PerfContext

PER_MODULE = ("temp_bytes", "compile_s", "run_s")


def module_values(manifest, metric: str) -> dict[str, float]:
    """Per module name: temp bytes (the largest compilation of that name), compile seconds (summed), or the fastest
    timed call after warm-up (the fastest of any compilation of that name)."""
    measured = getattr(manifest, "metrics", None)
    values: dict[str, float] = {}
    for m in getattr(measured, "modules", None) or []:
        if metric == "temp_bytes" and m.memory is not None and m.memory.temp_bytes is not None:
            values[m.name] = max(values.get(m.name, 0.0), float(m.memory.temp_bytes))
        elif metric == "compile_s" and m.compile_s is not None:
            values[m.name] = values.get(m.name, 0.0) + m.compile_s
        elif metric == "run_s" and m.calls is not None and m.calls.wall_s:
            counted = m.calls.wall_s[m.calls.warmup :] or m.calls.wall_s
            values[m.name] = min(values.get(m.name, float("inf")), min(counted))
    return values


def compare(good, bad, metric: str) -> list[ModuleGrowth]:
    before, after = module_values(good, metric), module_values(bad, metric)
    rows = []
    for name in sorted(set(before) | set(after)):
        g, b = before.get(name), after.get(name)
        ratio = b / g if g and b is not None else None
        rows.append(ModuleGrowth(name=name, metric=metric, good=g, bad=b, ratio=round(ratio, 4) if ratio else None))
    return sorted(rows, key=lambda r: -((r.bad or 0.0) - (r.good or 0.0)))  # what grew most, not a tiny module x3


def growth(ctx: PerfContext) -> str:
    from xlatools.records import read_bundle
    from xlatools.records.run import RUN_KINDS

    found = ctx.state.releases
    if found is None or not found.last_good_bundle or not found.first_bad_bundle:
        raise StageProblem(StageStatus.CANNOT_RUN, "needs the step runs of last good and first bad", EXIT_MISSING)
    good, bad = (read_bundle(Path(b), kinds=RUN_KINDS) for b in (found.last_good_bundle, found.first_bad_bundle))
    name = (ctx.request.test.rule.metric or "").partition(":")[0]
    metrics = [name, *(m for m in PER_MODULE if m != name)] if name in PER_MODULE else list(PER_MODULE)
    result = GrowthFound(good_bundle=found.last_good_bundle, bad_bundle=found.first_bad_bundle)
    for metric in metrics:  # the triage's metric first; the 5 that grew most of each
        result.modules += [row for row in compare(good, bad, metric) if row.ratio is not None][:5]
    ctx.state.growth = result
    if not result.modules:
        result.note = "the two runs have no per-module metrics in common (runs made without xlatools' metrics)"
        return result.note
    top = result.modules[0]
    return f"{top.name} grew most in {top.metric}: {top.good:.4g} -> {top.bad:.4g} ({top.ratio:.3g}x)"
