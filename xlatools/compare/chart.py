"""Geometry of the pass timeline charts (instruction count per pass step); the template draws the SVG."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlatools.compare.model import PassRow, StepInfo

WIDTH, HEIGHT, PAD_LEFT, PAD_RIGHT, PAD_Y = 720, 160, 48, 12, 18


@dataclass
class Point:
    x: float
    y: float
    label: str  # tooltip
    changed: bool


@dataclass
class Series:
    name: str  # "A", "B" or the module
    css: str  # class of the line: series-a / series-b
    points: list[Point]

    @property
    def polyline(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclass
class Chart:
    title: str
    series: list[Series]
    y_max: int
    steps: int
    width: int = WIDTH
    height: int = HEIGHT
    highlight: tuple[float, float] | None = None  # x range of the first diverging pass
    ticks: list[tuple[float, str]] = field(default_factory=list)  # y position, label


def _scale(count: int, y_max: int) -> float:
    return HEIGHT - PAD_Y - (HEIGHT - 2 * PAD_Y) * (count / y_max if y_max else 0)


def _x(position: int, total: int) -> float:
    span = WIDTH - PAD_LEFT - PAD_RIGHT
    return PAD_LEFT + (span * position / (total - 1) if total > 1 else span / 2)


def _points(steps: list[tuple[int, StepInfo | None]], total: int, y_max: int) -> list[Point]:
    return [
        Point(
            _x(pos, total),
            _scale(s.instructions or 0, y_max),
            f"{s.step:04d} {s.pipeline}/{s.pass_name}: {s.instructions} instructions{' (changed)' if s.changed else ''}",
            bool(s.changed),
        )
        for pos, s in steps
        if s is not None
    ]


def _ticks(y_max: int) -> list[tuple[float, str]]:
    return [(_scale(v, y_max), str(v)) for v in sorted({0, y_max // 2, y_max})]


def module_chart(title: str, steps: list[StepInfo]) -> Chart:
    y_max = max((s.instructions or 0 for s in steps), default=0)
    points = _points(list(enumerate(steps)), len(steps), y_max)
    return Chart(title, [Series(title, "series-a", points)], y_max, len(steps), ticks=_ticks(y_max))


def aligned_chart(title: str, rows: list[PassRow], divergence_row: int | None) -> Chart:
    """A and B over the aligned rows; the first diverging row is shaded."""
    y_max = max((s.instructions or 0 for r in rows for s in (r.a, r.b) if s), default=0)
    total = len(rows)
    series = [
        Series("A", "series-a", _points([(i, r.a) for i, r in enumerate(rows)], total, y_max)),
        Series("B", "series-b", _points([(i, r.b) for i, r in enumerate(rows)], total, y_max)),
    ]
    highlight = None
    if divergence_row is not None and divergence_row >= 0 and total:
        half = (WIDTH - PAD_LEFT - PAD_RIGHT) / max(total - 1, 1) / 2
        centre = _x(divergence_row, total)
        highlight = (centre - half, 2 * half)
    return Chart(title, series, y_max, total, highlight=highlight, ticks=_ticks(y_max))
