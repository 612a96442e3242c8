"""What two runs measured per compiled module (records.metrics: compile time, memory_analysis() bytes,
timed calls), side by side with B / A, the largest change first; and where memory grew, the largest
buffers of the grown module on each side (compare/buffers.py).

Modules are paired through the dump's matching where both runs dumped (a metric record names its dump
module, `dump_id`), else by name in compile order (the n-th `jit_step` of A with the n-th of B). The order
ranks each module by its largest change factor (B / A or A / B) among the metrics past their floor
(FLOORS: a 40 ms compile that takes 60 ms, or 2 kB more of temp, is not news); `run_s` is the median of
the timed calls past the warm-up, as the built-in metric is, shown with its minimum and how many calls, and
ranks only when the calls of the two sides do not overlap (`separated`, with MIN_CALLS or more each: one call is
mostly first-run costs, and a loaded machine moves medians by tens of percent)."""

from __future__ import annotations

import math
import statistics

from xlatools.compare.buffers import module_buffers
from xlatools.compare.layers import GrownModule, MetricDelta, MetricsDiff, ModuleMetricsDelta
from xlatools.records.metrics import ModuleMetrics, RunMetrics
from xlatools.run.dumps import DumpIndex

METRICS = ("compile_s", "run_s", "temp_bytes", "argument_bytes", "output_bytes")
FLOORS = {"compile_s": 0.5, "run_s": 1e-4, "temp_bytes": 64 << 10, "argument_bytes": 64 << 10, "output_bytes": 64 << 10}
MEMORY = ("temp_bytes", "argument_bytes", "output_bytes")
MIN_CALLS = 3  # timed calls past the warm-up, on each side, for run_s to rank a module
GROWTH = 1.1  # a module whose memory grew past this factor (and past the floor) shows its buffers
MAX_GROWN = 3


def _value(m: ModuleMetrics, metric: str) -> tuple[float | None, str | None, list[float]]:
    """(the value, its spread in words, the timed calls past the warm-up) of one metric of one module."""
    if metric == "compile_s":
        return m.compile_s, None, []
    if metric == "run_s":
        if m.calls is None or not m.calls.wall_s:
            return None, None, []
        past = m.calls.wall_s[m.calls.warmup :]
        times = past or m.calls.wall_s
        what = f"median of {len(times)} calls" if past else "the warm-up call alone"
        return statistics.median(times), f"{what}; min {min(times) * 1e3:.3g} ms", past
    value = getattr(m.memory, metric, None) if m.memory else None
    return (None if value is None else float(value)), None, []


def separated(a: list[float], b: list[float]) -> bool:
    """Enough calls on each side, and every call of one side faster than every call of the other: a change in
    run time that no amount of noise among these calls explains (with 3 calls each, 1 chance in 10 by luck)."""
    if min(len(a), len(b)) < MIN_CALLS:
        return False
    return max(a) < min(b) or max(b) < min(a)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or (a == 0 and b == 0):
        return None
    return math.inf if a == 0 else b / a


def _change(deltas: list[MetricDelta]) -> float:
    factors = []
    for d in deltas:
        d.ranked = d.ranked and max(d.a or 0, d.b or 0) >= FLOORS.get(d.metric, 0) and d.ratio is not None
        if d.ranked and d.ratio is not None:
            factors.append(d.ratio if d.ratio >= 1 else (1 / d.ratio if d.ratio > 0 else math.inf))
    return max(factors, default=1.0)


def _label(m: ModuleMetrics) -> str:
    return f"#{m.id}" + (f" ({m.dump_id:04d})" if m.dump_id is not None else "")


def _delta(a: ModuleMetrics, b: ModuleMetrics) -> ModuleMetricsDelta:
    deltas = []
    for metric in METRICS:
        (value_a, spread_a, n_a), (value_b, spread_b, n_b) = _value(a, metric), _value(b, metric)
        if value_a is None and value_b is None:
            continue
        enough = metric != "run_s" or separated(n_a, n_b)
        deltas.append(MetricDelta(metric, value_a, value_b, ratio(value_a, value_b), spread_a, spread_b, enough))
    name = a.name if a.name == b.name else f"{a.name} / {b.name}"
    change = _change(deltas)
    return ModuleMetricsDelta(name, _label(a), _label(b), _finite(deltas), change if math.isfinite(change) else 1e9)


def _finite(deltas: list[MetricDelta]) -> list[MetricDelta]:
    """Ratios from 0 (no ratio) are None in the record: JSON has no infinity; `a` = 0 says what happened."""
    for d in deltas:
        if d.ratio is not None and not math.isfinite(d.ratio):
            d.ratio = None
    return deltas


def pair_modules(
    a: list[ModuleMetrics], b: list[ModuleMetrics], dump_pairs: dict[int, int]
) -> tuple[list[tuple[ModuleMetrics, ModuleMetrics]], list[ModuleMetrics], list[ModuleMetrics]]:
    """Pairs through the dumps' matching (`dump_pairs`: A's dump id -> B's), then by name in compile order."""
    left_b = list(b)
    pairs = []
    rest_a = []
    for m in a:
        target = dump_pairs.get(m.dump_id) if m.dump_id is not None else None
        other = next((x for x in left_b if target is not None and x.dump_id == target), None)
        if other is None:
            rest_a.append(m)
            continue
        pairs.append((m, other))
        left_b.remove(other)
    only_a = []
    for m in rest_a:
        other = next((x for x in left_b if x.name == m.name), None)
        if other is None:
            only_a.append(m)
            continue
        pairs.append((m, other))
        left_b.remove(other)
    return pairs, only_a, left_b


def _one_process(metrics: RunMetrics) -> list[ModuleMetrics]:
    """The modules of the first process (a multi-process run compiles the same modules in every process)."""
    processes = sorted({m.process for m in metrics.modules if m.process is not None})
    return [m for m in metrics.modules if m.process is None or (processes and m.process == processes[0])]


def _processes(a: RunMetrics, b: RunMetrics) -> list[MetricDelta]:
    out = []
    for metric, combine in (("peak_rss_mb", max), ("cpu_s", sum)):
        values = []
        for side in (a, b):
            found = [getattr(p, metric) for p in side.processes if getattr(p, metric) is not None]
            values.append(float(combine(found)) if found else None)
        if values[0] is not None or values[1] is not None:
            out.append(MetricDelta(metric, values[0], values[1], ratio(values[0], values[1])))
    return out


def diff_metrics(
    a: RunMetrics, b: RunMetrics, dump_pairs: dict[int, int], indexes: tuple[DumpIndex | None, DumpIndex | None]
) -> MetricsDiff:
    pairs, only_a, only_b = pair_modules(_one_process(a), _one_process(b), dump_pairs)
    result = MetricsDiff(
        modules=sorted((_delta(x, y) for x, y in pairs), key=lambda d: -d.change),
        only_a=[f"{_label(m)} {m.name}" for m in only_a],
        only_b=[f"{_label(m)} {m.name}" for m in only_b],
        processes=_finite(_processes(a, b)),
        notes=[f"{side}: {note}" for side, run in (("A", a), ("B", b)) for note in run.notes],
    )
    if a.measure_calls != b.measure_calls:
        result.notes.append(f"A timed {a.measure_calls} calls per executable, B {b.measure_calls} (-1: every call)")
    result.grown = _grown(pairs, indexes)
    return result


def _grown(pairs: list[tuple[ModuleMetrics, ModuleMetrics]], indexes) -> list[GrownModule]:
    """The modules whose memory grew most (temp + argument + output bytes), with their largest buffers."""
    found = []
    for a, b in pairs:
        total_a, total_b = (sum(v for k in MEMORY if (v := _value(m, k)[0]) is not None) for m in (a, b))
        if total_b - total_a >= FLOORS["temp_bytes"] and total_b >= GROWTH * total_a:
            found.append((total_b - total_a, a, b, total_a, total_b))
    grown = []
    for _, a, b, total_a, total_b in sorted(found, key=lambda f: -f[0])[:MAX_GROWN]:
        entry = GrownModule(b.name, "temp + argument + output bytes", total_a, total_b, ratio(total_a, total_b))
        for side, metric, index in (("a", a, indexes[0]), ("b", b, indexes[1])):
            module = index.modules.get(metric.dump_id) if index is not None and metric.dump_id is not None else None
            rows = module_buffers(index, module) if module is not None and index is not None else None
            if rows is None:
                entry.note = "largest buffers: run with --dump (the buffer-assignment dump) to see them"
            else:
                setattr(entry, f"buffers_{side}", rows)
        if entry.ratio is not None and not math.isfinite(entry.ratio):
            entry.ratio = None
        grown.append(entry)
    return grown
