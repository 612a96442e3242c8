"""ISSUE.md of a metric triage (pure rendering, then one atomic write): the numbers first (first bad release, both
values with their spread and runs), the workaround, the module that grew most, the timeline (table and picture),
the switches tried, every stage, and the exact commands that reproduce it."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from xlatools.records.bisect_metric import MetricRuns
from xlatools.records.triage_perf import PerfTriageState
from xlatools.vocab import StageStatus

ISSUE = "ISSUE.md"


def _runs(runs: MetricRuns | None) -> str:
    if runs is None or not runs.values:
        return "-"
    spread = f"{100 * (runs.spread or 0):.1f}%" if runs.relative else f"{runs.spread or 0:.4g}"
    return f"{runs.centre:.4g} ± {spread} ({len(runs.values)} run{'s' if len(runs.values) != 1 else ''})"


def _rel(path: str | None, root: Path, text: str | None = None) -> str:
    if not path:
        return "-"
    rel = os.path.relpath(path, root)
    return f"[{text or rel}]({rel})"


def _title(state: PerfTriageState, program: str) -> str:
    spec, found, metric = state.spec, state.releases, state.metric
    good, bad = (found.last_good, found.first_bad) if found else (spec.good, spec.bad)
    name = spec.test.rule.metric or "metric"
    if metric is not None and metric.ratio:
        worse = "higher" if not spec.test.rule.higher_is_better else "lower"
        return f"# jax {bad}: {name} of {program} is {metric.ratio:.3g}x jax {good}'s ({worse} is worse)"
    return f"# jax {bad}: {name} of {program} regressed from jax {good}"


def _summary(state: PerfTriageState, root: Path) -> list[str]:
    spec, found, metric = state.spec, state.releases, state.metric
    out = []
    if found:
        out.append(
            f"- **First bad release: jax {found.first_bad}** (last good: jax {found.last_good}; "
            f"{found.steps} steps, {_rel(found.folder, root, 'the bisection')})"
        )
    if metric is not None:
        how = (
            "every run gave the same value"
            if metric.exact
            else f"{metric.gap_se:.1f} standard errors apart"
            if metric.gap_se is not None
            else ""
        )
        out.append(
            f"- {metric.name}: jax {spec.good} {_runs(metric.good)} -> jax {spec.bad} {_runs(metric.bad)}"
            + (f" ({how})" if how else "")
        )
        if metric.boundary:
            lo, hi = metric.boundary
            held = "they differ beyond noise" if metric.boundary_differ else "NOT different beyond noise"
            out.append(f"- The boundary measured again side by side: {_runs(lo)} vs {_runs(hi)}: {held}")
    flags = state.flags
    if flags is not None and flags.recovers:
        out.append(
            f"- **Workaround**: `XLA_FLAGS={flags.flags[0]}` recovers it on jax {found.first_bad if found else spec.bad}"
        )
        if len(flags.flags) > 1:
            out.append(f"  (also: {', '.join(f'`{f}`' for f in flags.flags[1:])})")
    elif flags is not None:
        out.append(
            f"- No switch of the {flags.tried} tried recovers it (not one backend path: try `xlatools bisect passes`)"
        )
    growth = state.growth
    if growth is not None and growth.modules:
        top = growth.modules[0]
        out.append(
            f"- Module that grew most: `{top.name}`: {top.metric} {top.good:.4g} -> {top.bad:.4g} ({top.ratio:.3g}x)"
        )
    return out or ["- nothing found yet"]


def _timeline(state: PerfTriageState, root: Path) -> list[str]:
    result = state.timeline
    if result is None:
        return []
    rows = ["| release | value (median) | spread | runs | ratio to previous | change |", "|---|---|---|---|---|---|"]
    for row in result.rows:
        if row.runs is None:
            continue
        spread = f"{100 * (row.runs.spread or 0):.1f}%" if row.runs.relative else f"{row.runs.spread or 0:.4g}"
        ratio = f"{row.ratio:.3f}x" if row.ratio is not None else "-"
        rows.append(
            f"| {row.label} | {row.runs.centre:.4g} | {spread} | {len(row.runs.values)} | {ratio} | {row.change or ''} |"
        )
    return [
        f"## {result.metric} over the releases measured", "",
        f"![{result.metric} per release]({os.path.relpath(result.svg, root)})" if result.svg else "", "",
        *rows, "", f"The picture with the table: {_rel(result.html, root)}.", "",
    ]  # fmt: skip


def _modules(state: PerfTriageState) -> list[str]:
    growth = state.growth
    if growth is None or not growth.modules:
        return []
    rows = ["| module | metric | last good | first bad | ratio |", "|---|---|---|---|---|"]
    rows += [f"| `{m.name}` | {m.metric} | {m.good:.4g} | {m.bad:.4g} | {m.ratio:.3g}x |" for m in growth.modules]
    return ["## Compiled modules, last good vs first bad", "", *rows, ""]


def _commands(state: PerfTriageState, argv: list[str]) -> list[str]:
    spec, found = state.spec, state.releases
    good, bad = (found.last_good, found.first_bad) if found else (spec.good, spec.bad)
    program = " ".join(shlex.quote(a) for a in [Path(spec.test.program).name, *spec.test.args])
    extras = " ".join(shlex.quote(r) for r in spec.requirements or [])
    out = ["## Reproduce", "", "```sh"]
    for version in (good, bad):
        out += [
            f"python -m venv jax-{version} && jax-{version}/bin/pip install jax=={version} jaxlib=={version} {extras}".rstrip()
        ]
    out += [f"jax-{good}/bin/python {program}", f"jax-{bad}/bin/python {program}"]
    if state.flags and state.flags.recovers:
        out.append(f"XLA_FLAGS={state.flags.flags[0]} jax-{bad}/bin/python {program}   # the workaround")
    out += [
        "```",
        "",
        "Measured with xlatools (the same command continues the triage; `--fresh` starts over):",
        "",
        "```sh",
    ]
    out.append(" ".join(shlex.quote(a) for a in ["xlatools", *argv]))
    out += ["```", ""]
    return out


def render(state: PerfTriageState, argv: list[str]) -> str:
    root = Path(state.folder or ".")
    program = Path(state.spec.test.program.split()[-1]).name
    out = [
        _title(state, program),
        "",
        f"Found by `xlatools triage` (state: {_rel(str(root / 'perf-triage.json'), root)}).",
        "",
    ]
    out += ["## Findings", "", *_summary(state, root), ""]
    out += _timeline(state, root)
    if state.flags and state.flags.table:
        bad = state.releases.first_bad if state.releases else state.spec.bad
        out += [f"## Switches tried on jax {bad}", "", "```", *state.flags.table, "```", ""]
    out += _modules(state)
    out += ["## Stages", "", "| stage | status | finding |", "|---|---|---|"]
    out += [f"| {r.stage} | {r.status} | {r.reason.replace('|', '/')} |" for r in state.stages if r.stage != "report"]
    if any(r.status not in (StageStatus.DONE, StageStatus.SKIPPED) and r.stage != "report" for r in state.stages):
        out += ["", "Stages not done say why above; run the same command again to retry them."]
    out += ["", *_commands(state, argv)]
    return "\n".join(out)


def write_issue(state: PerfTriageState, argv: list[str]) -> str:
    from xlatools.fsutil import atomic_write_text
    from xlatools.redact import redact_text

    path = Path(state.folder or ".") / ISSUE
    state.issue = str(path)
    atomic_write_text(path, redact_text(render(state, argv)))
    return str(path)
