"""What a timeline's measurements say (pure): a row per release (median, spread, runs, ratio to the release
before it) and every change beyond noise between neighbouring measured releases, up or down."""

from __future__ import annotations

import math
from statistics import median
from typing import Sequence

from xlatools.bisect.noise import Anchors, distinct
from xlatools.records.bisect import Candidate, StepRecord
from xlatools.records.bisect_metric import MetricRuns, TimelineResult, TimelineRow, TimelineStep
from xlatools.vocab import StepOutcome


def runs_of(candidate: Candidate, steps: Sequence[StepRecord], metric: str) -> tuple[MetricRuns | None, str | None]:
    """Every measured value of one release (None and why when it was not measured)."""
    mine = sorted((s for s in steps if s.key == candidate.key), key=lambda s: s.attempt)
    skipped = next((s.reason for s in mine if s.outcome == StepOutcome.SKIP), None)
    runs = MetricRuns(name=metric)
    for step in mine:
        if step.outcome != StepOutcome.SKIP and step.metric is not None:
            runs.values += step.metric.values
            runs.bundles += step.metric.bundles
    if not runs.values:
        return None, skipped or "not measured yet"
    return runs, None


def exact(all_runs: Sequence[MetricRuns], rounds: int) -> bool:
    """Every release measured `rounds` times or more, each with one identical value."""
    return bool(all_runs) and all(len(r.values) >= rounds and len(set(r.values)) == 1 for r in all_runs)


def analyse(
    candidates: Sequence[Candidate], steps: Sequence[StepRecord], metric: str, higher_is_better: bool, min_exact: int
) -> TimelineResult:
    rows: list[TimelineRow] = []
    changes: list[TimelineStep] = []
    previous: TimelineRow | None = None
    for candidate in candidates:
        runs, skipped = runs_of(candidate, steps, metric)
        row = TimelineRow(key=candidate.key, label=candidate.label, runs=runs, skipped=skipped)
        if runs is not None:
            scale = Anchors(tuple(runs.values), tuple(runs.values), not higher_is_better)
            summary = scale.summary(runs.values)
            runs.centre, runs.spread, runs.relative = summary.centre, round(summary.spread, 5), summary.relative
            if previous is not None and previous.runs is not None:
                before = previous.runs.values
                differ, ratio = distinct(before, runs.values, not higher_is_better)
                row.ratio = round(ratio, 4) if math.isfinite(ratio) else None
                if differ:
                    up = median(runs.values) > median(before)
                    row.change = "up" if up else "down"
                    changes.append(
                        TimelineStep(
                            before=previous.key,
                            after=candidate.key,
                            direction=row.change,
                            worse=up != higher_is_better,
                            ratio=round(ratio, 4),
                        )
                    )
            previous = row
        rows.append(row)
    measured = [r.runs for r in rows if r.runs is not None]
    return TimelineResult(
        metric=metric, higher_is_better=higher_is_better, exact=exact(measured, min_exact), rows=rows, steps=changes
    )


def _value(runs: MetricRuns) -> tuple[str, str]:
    spread = f"{100 * (runs.spread or 0):.1f}%" if runs.relative else f"{runs.spread or 0:.4g}"
    return f"{runs.centre:.4g}", spread


def table_lines(result: TimelineResult) -> list[str]:
    """The table (release, value, spread, runs, ratio to previous, change) and the named steps."""
    lines = [f"{'release':<18} {result.metric:>12} {'spread':>8} {'runs':>5} {'ratio':>8}  change"]
    labels = {r.key: r.label for r in result.rows}
    for row in result.rows:
        if row.runs is None:
            lines.append(f"{row.label:<18} {'-':>12} {'-':>8} {'0':>5} {'-':>8}  skip: {row.skipped}")
            continue
        value, spread = _value(row.runs)
        ratio = f"{row.ratio:.3f}x" if row.ratio is not None else "-"
        change = {"up": "UP", "down": "DOWN"}.get(row.change or "", "")
        lines.append(f"{row.label:<18} {value:>12} {spread:>8} {len(row.runs.values):>5} {ratio:>8}  {change}")
    if not result.steps:
        lines.append("no change beyond noise between neighbouring releases")
    for step in result.steps:
        what = "worse" if step.worse else "better"
        lines.append(
            f"step {step.direction} ({what}): {labels[step.before]} -> {labels[step.after]}: {step.ratio:.3g}x"
            + (" (a regression)" if step.worse else " (an improvement or a fix)")
        )
    return lines
