"""Plain-text rendering of a doctor report and of log hints (pure: data in, lines out)."""

from __future__ import annotations

from xlatools.doctor.model import Report
from xlatools.doctor.signatures import Hint
from xlatools.vocab import CheckStatus

MARK = {CheckStatus.OK: "ok  ", CheckStatus.WARN: "WARN", CheckStatus.FAIL: "FAIL", CheckStatus.SKIP: "skip"}


def report_lines(report: Report) -> list[str]:
    width = max((len(c.name) for c in report.checks), default=0)
    lines = []
    for check in report.checks:
        # evidence quoted from a tool (sinfo's, sbatch's messages) may hold several lines: each under the first
        under = " " * (len(MARK[check.status]) + width + 4)
        first, *more = check.evidence.strip("\n").splitlines() or [""]
        lines.append(f"{MARK[check.status]}  {check.name.ljust(width)}  {first}")
        lines += [f"{under}{line.strip()}" for line in more if line.strip()]
        if check.fix and check.status in (CheckStatus.WARN, CheckStatus.FAIL):
            lines.append(f"{under}fix: {' '.join(check.fix.split())}")
    counts = report.counts()
    summary = ", ".join(f"{counts[s]} {s}" for s in CheckStatus if counts[s])
    verdict = (
        "problems found"
        if report.exit_code
        else "no problem found"
        if not counts[CheckStatus.WARN]
        else "warnings only"
    )
    lines.append(f"doctor: {summary} ({verdict}{'; --strict' if report.strict else ''})")
    return lines


def hint_lines(hints: list[Hint], source: str) -> list[str]:
    if not hints:
        return [f"no known failure signature in {source}"]
    lines = [f"{len(hints)} known failure signature(s) in {source}:"]
    for hint in hints:
        lines.append(f"- [{hint.id}] line {hint.line_number}: {hint.line[:200]}")
        lines.append(f"  why: {hint.explanation}")
        lines.append(f"  fix: {hint.fix}")
        if hint.link:
            lines.append(f"  see: {hint.link}")
    return lines
