"""A MetricsDiff for people: cells with units and the ratio (`13.4 MB -> 84.7 MB (6.3x)`), text lines for
`xlatools diff`, and the geometry of the report's chart (one row of bars per module, the ratio B / A of each
metric on a log scale centred on 1: left is smaller or faster in B, right larger or slower)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xlatools.compare.layers import BufferRow, MetricDelta, MetricsDiff
from xlatools.console import columns

SHOWN = 15  # modules in the text table and the chart (the JSON and the report's table have all)
LABELS = {
    "compile_s": "compile",
    "run_s": "run (median)",
    "temp_bytes": "temp",
    "argument_bytes": "argument",
    "output_bytes": "output",
    "peak_rss_mb": "peak RSS",
    "cpu_s": "CPU",
}


def amount(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric.endswith("_bytes"):
        for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
            if value >= size:
                return f"{value / size:.1f} {unit}"
        return f"{value:.0f} B"
    if metric == "peak_rss_mb":
        return f"{value:.0f} MiB"
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"


def factor(d: MetricDelta) -> str:
    if d.ratio is None:
        return "new" if d.a == 0 and d.b else ("gone" if d.b == 0 and d.a else "")
    return f"{d.ratio:.3g}x"


def cell(d: MetricDelta | None) -> str:
    """`13.4 MB -> 84.7 MB (6.3x)`, or the one value when both sides agree."""
    if d is None:
        return "-"
    a, b = amount(d.metric, d.a), amount(d.metric, d.b)
    if a == b:
        return a
    mark = factor(d)
    return f"{a} -> {b}" + (f" ({mark})" if mark else "")


def metric_rows(diff: MetricsDiff, most: int | None = SHOWN) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("module", "A", "B", "change", *(LABELS[m] for m in _metrics(diff)))]
    for m in diff.modules[:most]:
        rows.append(
            (
                m.name,
                m.a,
                m.b,
                f"{m.change:.3g}x" if m.change > 1 else "-",
                *(cell(m.get(name)) for name in _metrics(diff)),
            )
        )
    return rows


def _metrics(diff: MetricsDiff) -> list[str]:
    from xlatools.compare.metricsdiff import METRICS

    return [name for name in METRICS if any(m.get(name) for m in diff.modules)]


def buffer_line(row: BufferRow) -> str:
    what = f"{row.opcode} ({row.op_name})" if row.op_name else (row.opcode or "")
    where = f" at {row.source}" if row.source else ""
    return f"{amount('temp_bytes', row.size):>9} {row.kind:<12} {row.value} {row.shape} {what}{where}"


def metrics_lines(diff: MetricsDiff) -> list[str]:
    out = [f"metrics (B / A), largest change first ({len(diff.modules)} modules paired):"]
    out += ["  " + line for line in columns(metric_rows(diff)).splitlines()]
    if len(diff.modules) > SHOWN:
        out.append(f"  ... {len(diff.modules) - SHOWN} more (--json has them all)")
    out += [f"  only in A: {name}" for name in diff.only_a] + [f"  only in B: {name}" for name in diff.only_b]
    if diff.processes:
        out.append("  program: " + "; ".join(f"{LABELS[d.metric]} {cell(d)}" for d in diff.processes))
    for grown in diff.grown:
        out.append(
            f"memory grew in {grown.name}: {amount('temp_bytes', grown.a)} -> {amount('temp_bytes', grown.b)} "
            f"({grown.metric}); largest buffers:"
        )
        for side, rows in (("A", grown.buffers_a), ("B", grown.buffers_b)):
            out += [f"  {side} {buffer_line(r)}" for r in rows]
        if grown.note:
            out.append(f"  {grown.note}")
    out += [f"  note: {n}" for n in diff.notes]
    return out


@dataclass
class Bar:
    metric: str
    x: float  # left edge
    width: float
    y: float
    css: str  # m0 ... m4: the metric's colour; `faint` when it does not count in the module's change
    label: str  # tooltip


@dataclass
class RatioChart:
    rows: list[tuple[float, str]]  # y of each module's label, the label
    bars: list[Bar]
    legend: list[tuple[str, str]]  # css class, metric label
    ticks: list[tuple[float, str]]  # x, `0.5x`
    centre: float
    width: int
    height: int


ROW, TOP, LEFT, RIGHT, SPAN = 30, 24, 220, 20, 4.0  # SPAN: the scale reaches 2**4 = 16x on either side


def ratio_chart(diff: MetricsDiff, most: int = SHOWN) -> RatioChart | None:
    modules = [m for m in diff.modules[:most] if any(d.ratio is not None for d in m.metrics)]
    if not modules:
        return None
    width = 760
    half = (width - LEFT - RIGHT) / 2
    centre = LEFT + half
    metrics = _metrics(diff)
    step = (ROW - 6) / max(len(metrics), 1)
    bars: list[Bar] = []
    rows = []
    for i, module in enumerate(modules):
        top = TOP + i * ROW
        rows.append((top + ROW / 2, f"{module.name} {module.b}"))
        for j, name in enumerate(metrics):
            d = module.get(name)
            if d is None or d.ratio is None or d.ratio <= 0:
                continue
            reach = max(-SPAN, min(SPAN, math.log2(d.ratio))) / SPAN * half
            x = centre + min(reach, 0)
            label = f"{module.name}: {LABELS[name]} {cell(d)}" + ("" if d.ranked else " (not counted)")
            css = f"m{j}" + ("" if d.ranked else " faint")
            bars.append(Bar(name, x, max(abs(reach), 1), top + 3 + j * step, css, label))
    ticks = [(centre + k / SPAN * half, f"{2**k:g}x") for k in range(-int(SPAN), int(SPAN) + 1, 2)]
    legend = [(f"m{j}", LABELS[name]) for j, name in enumerate(metrics)]
    return RatioChart(rows, bars, legend, ticks, centre, width, TOP + len(modules) * ROW + 10)


@dataclass
class MetricCell:
    text: str
    ranked: bool  # counts in the module's change (else shown muted)
    title: str  # tooltip: the spread of run_s, why it does not count


@dataclass
class MetricsRow:
    name: str
    a: str
    b: str
    change: str
    cells: list[MetricCell]


@dataclass
class MetricsSection:
    """What the report's metrics section shows (templates/metrics.html.j2)."""

    diff: MetricsDiff
    labels: list[str]
    rows: list[MetricsRow]
    chart: RatioChart | None


def _cell(d: MetricDelta | None) -> MetricCell:
    if d is None:
        return MetricCell("-", False, "")
    spread = "; ".join(f"{side}: {s}" for side, s in (("A", d.spread_a), ("B", d.spread_b)) if s)
    why = "" if d.ranked else "not counted in the change (below its floor, or the calls of A and B overlap)"
    return MetricCell(cell(d), d.ranked, "; ".join(x for x in (spread, why) if x))


def metrics_section(diff: MetricsDiff) -> MetricsSection:
    names = _metrics(diff)
    rows = [
        MetricsRow(m.name, m.a, m.b, f"{m.change:.3g}x" if m.change > 1 else "-", [_cell(m.get(n)) for n in names])
        for m in diff.modules
    ]
    return MetricsSection(diff, [LABELS[n] for n in names], rows, ratio_chart(diff))
