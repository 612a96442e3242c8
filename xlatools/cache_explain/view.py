"""For people: `explain-cache`'s report as text, and `inspect`'s table of jitted functions (plain data in,
lines out)."""

from __future__ import annotations

import os

from xlatools.records.cache_report import CacheReport, Explanation
from xlatools.records.compiles import FunctionSummary
from xlatools.records.metrics import RunMetrics

HEADER = (
    "function",
    "defined at",
    "traces",
    "compiles",
    "signatures",
    "hits",
    "misses",
    "not cached",
    "compile s",
    "lost s",
)
MAX_ROWS = 30  # of inspect's table; the manifest keeps every row


def _short(where: str | None) -> str:
    if not where:
        return "-"
    path, _, line = where.rpartition(":")
    return f"{os.path.basename(path)}:{line}" if path else where


def function_rows(metrics: RunMetrics, internal: bool = False) -> list[tuple[str, ...]]:
    """The header and one row per jitted function, worst first (compile seconds lost); jax's own helpers only
    with `internal`."""
    rows: list[tuple[str, ...]] = [HEADER]
    for f in [f for f in metrics.functions if internal or not f.internal][:MAX_ROWS]:
        rows.append(_row(f))
    return rows


def _row(f: FunctionSummary) -> tuple[str, ...]:
    who = f.name + (f" (p{f.process})" if f.process is not None else "") + (" [jax]" if f.internal else "")
    return (
        who,
        _short(f.where),
        str(f.traces),
        str(f.compiles),
        str(f.signatures),
        str(f.hits),
        str(f.misses),
        str(f.not_cached),
        f"{f.compile_s:.3f}",
        f"{f.lost_s:.3f}",
    )


def function_lines(metrics: RunMetrics, bundle: str | None = None, internal: bool = False) -> list[str]:
    """What the table leaves out: why compiles were not cached, the recompile count and where to read more
    (`internal`: jax's own helpers are in the table)."""
    lines = []
    whys = {why for f in metrics.functions if not f.internal for why in f.not_cached_why}
    lines += [f"not cached: {why}" for why in sorted(whys)[:5]]
    if metrics.recompiles is not None:
        lines.append(
            "nothing recompiled"
            if metrics.recompiles == 0
            else f"recompiles: {metrics.recompiles} (why, part by part: xlatools explain-cache {bundle or 'BUNDLE'})"
        )
    hidden = 0 if internal else sum(f.internal for f in metrics.functions)
    if hidden:
        lines.append(f"({hidden} of jax's own helpers left out of the table: list them with --all)")
    return lines


def report_lines(report: CacheReport) -> list[str]:
    """The whole report: each explanation with its causes, the notes, the summary."""
    runs = f"run A {report.run_a}" + (f", run B {report.run_b}" if report.run_b else "")
    lines = [f"explain-cache: {runs}"]
    for explanation in report.explanations:
        lines += _explanation_lines(explanation, two=report.run_b is not None)
    lines += [f"note: {note}" for note in report.notes]
    lines.append(report.summary)
    return lines


def _explanation_lines(e: Explanation, two: bool) -> list[str]:
    where = f" ({_short(e.where)})" if e.where else ""
    process = f", process {e.process}" if e.process is not None else ""
    against = ""
    if e.compared_with is not None:
        against = f" vs run A's #{e.compared_with}" if e.kind == "miss" else f" vs #{e.compared_with}"
    facts = [f"module #{e.module}{against}"]
    if e.site:
        facts.append(f"called at {_short(e.site)}")
    if e.seconds is not None:
        facts.append(f"{e.seconds:.3f} s")
    if e.cache:
        facts.append(f"persistent cache {e.cache}")
    run = " in run B" if two else ""
    lines = [f"{e.kind}{run}: {e.function}{where}{process}: {', '.join(facts)}"]
    for cause in e.causes:
        tag = "[jax key] " if cause.source == "jax" else ""
        lines.append(f"  - {tag}{cause.part}: {cause.detail}")
    if not e.known:
        lines.append("  (nothing else xlatools records differs)")
    return lines
