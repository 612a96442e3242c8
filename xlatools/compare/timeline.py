"""The picture of a metric over releases (`xlatools bisect timeline`, triage --metric): a standalone SVG
(timeline.svg, embeddable in any page) and timeline.html (the SVG, the table and the steps, in the
report's style), both from Jinja2 templates like the HTML report, written atomically.

Geometry here, drawing in templates/timeline.svg.j2: one point per measured release at its median,
a bar from its lowest to its highest run, the line through them, every change beyond noise marked
(red where it got worse, green where it got better), a skipped release as a gap with a cross.
SVG by our own template rather than a plotting library: jinja2 is already a dependency, the output is
a few kilobytes of text a browser, an editor and a GitHub comment all show, and no matplotlib (about
40 MB, seconds to import) is needed where xlatools runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from xlatools.records.bisect_metric import TimelineResult

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 760, 300, 70, 16, 28, 84


@dataclass
class Mark:
    x: float
    y: float
    low: float  # y of the lowest run
    high: float  # y of the highest run
    label: str
    tip: str
    change: str = ""  # "worse" or "better" when it differs from the release before it beyond noise


@dataclass
class Picture:
    title: str
    metric: str
    width: int = WIDTH
    height: int = HEIGHT
    marks: list[Mark] = field(default_factory=list)
    skipped: list[tuple[float, str]] = field(default_factory=list)  # x, tooltip
    ticks: list[tuple[float, str]] = field(default_factory=list)  # y, label
    labels: list[tuple[float, str]] = field(default_factory=list)  # x, release
    log: bool = False

    @property
    def polyline(self) -> str:
        return " ".join(f"{m.x:.1f},{m.y:.1f}" for m in self.marks)


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        return [10**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    step = 10 ** math.floor(math.log10(hi - lo or abs(hi) or 1))
    while (hi - lo) / step > 6:
        step *= 2
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 2)]


def picture(result: TimelineResult, title: str) -> Picture:
    rows = result.rows
    values = [v for r in rows if r.runs for v in r.runs.values]
    pic = Picture(title=title, metric=result.metric)
    if not values:
        return pic
    lo, hi = min(values), max(values)
    pic.log = lo > 0 and hi / lo > 20  # several orders of magnitude: a log axis
    if not pic.log:
        lo, hi = min(0.0, lo), hi * 1.08 or 1.0
    ticks = _ticks(lo, hi, pic.log)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    scale = (lambda v: math.log10(v)) if pic.log else (lambda v: v)
    span = scale(hi) - scale(lo) or 1.0

    def y(v: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (scale(v) - scale(lo)) / span)

    def x(i: int) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (i + 0.5) / len(rows)

    pic.ticks = [(y(t), _fmt(t)) for t in ticks if lo <= t <= hi]
    worse = {s.after: s.worse for s in result.steps}
    for i, row in enumerate(rows):
        pic.labels.append((x(i), row.label.removeprefix("jax ")))
        if row.runs is None:
            pic.skipped.append((x(i), f"{row.label}: skip ({row.skipped})"))
            continue
        centre = row.runs.centre if row.runs.centre is not None else row.runs.values[0]
        tip = f"{row.label}: {result.metric} {_fmt(centre)} ({len(row.runs.values)} runs)"
        if row.ratio is not None:
            tip += f", {row.ratio:.3g}x the release before"
        change = "" if row.key not in worse else ("worse" if worse[row.key] else "better")
        pic.marks.append(
            Mark(x(i), y(centre), y(min(row.runs.values)), y(max(row.runs.values)), row.label, tip, change)
        )
    return pic


def write_timeline(result: TimelineResult, folder: Path, title: str) -> tuple[Path, Path]:
    """timeline.svg and timeline.html in `folder`."""
    import jinja2

    from xlatools.fsutil import atomic_write_text

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("xlatools.compare", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2", "svg"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    pic = picture(result, title)
    svg = env.get_template("timeline.svg.j2").render(p=pic)
    labels = {r.key: r.label for r in result.rows}
    html = env.get_template("timeline.html.j2").render(p=pic, svg=svg, result=result, labels=labels)
    svg_path, html_path = folder / "timeline.svg", folder / "timeline.html"
    atomic_write_text(svg_path, svg)
    atomic_write_text(html_path, html)
    return svg_path, html_path
