"""The triage's ISSUE.md: every stage's finding, linked, and the minimal module's report (pure rendering)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from xlatools.records.replay import IsolatedInstruction
from xlatools.records.triage import DiffFound, IsolateFound, TriageState
from xlatools.vocab import StageStatus, TriageStage

ISSUE = "ISSUE.md"


def _link(path: str | None, root: Path, text: str | None = None) -> str:
    """A Markdown link relative to the triage folder (where ISSUE.md is)."""
    if not path:
        return "-"
    rel = os.path.relpath(path, root)
    if not os.path.lexists(path):  # removed since (or never finished): named, not linked
        return f"{text or rel} (no longer at {rel})"
    return f"[{text or rel}]({rel})"


def _instruction(row: IsolatedInstruction) -> str:
    return f"`{row.name} = {row.opcode}({', '.join(row.operands)})` ({row.shape})"


def _title(state: TriageState, program: str) -> str:
    good, bad = (
        (state.releases.last_good, state.releases.first_bad) if state.releases else (state.spec.good, state.spec.bad)
    )
    what = "a wrong result" if state.reduce or (state.diff and state.diff.module) else "a regression"
    verdict = f"jaxlib {good} is right"
    crash = state.diff.crash if state.diff else None
    if crash is not None:
        what, verdict = f"a crash ({crash.what().split(': ', 1)[0]})", f"jaxlib {good} runs it"
    if state.diff and state.diff.precision_only:
        what, verdict = "a precision difference, not a miscompile,", f"jaxlib {good} agrees at full precision"
    where = {"cpu": ["CPU"], "gpu": ["GPU"]}.get(str(state.spec.platform), [])  # auto: whatever the runs found
    culprit = [f"pass {', '.join(state.passes.culprits)}"] if state.passes and state.passes.culprits else []
    about = f" ({', '.join(where + culprit)})" if where or culprit else ""
    return f"# jaxlib {bad}{about}: {what} in `{program}` ({verdict})"


def _stage_rows(state: TriageState) -> list[str]:
    rows = ["| stage | status | finding |", "|---|---|---|"]
    for record in state.stages:
        if record.stage == TriageStage.REPORT:
            continue  # being written: this file
        reason = record.reason.replace("|", "\\|").replace("\n", " ")
        rows.append(f"| {record.stage} | {record.status} | {reason} |")
    return rows


def _findings(state: TriageState, root: Path) -> list[str]:
    out = []
    if state.releases:
        r = state.releases
        out.append(
            f"- Releases: last good jax {r.last_good} ({_link(r.last_good_bundle, root, 'step run')}), first bad "
            f"jax {r.first_bad} ({_link(r.first_bad_bundle, root, 'step run')}); bisection: {_link(r.folder, root)}"
            if r.folder
            else f"- Releases: not bisected; the ends as given (jax {r.last_good}, jax {r.first_bad})"
        )
    if state.dumps:
        d = state.dumps
        out.append(
            f"- Dumping runs: jax {d.last_good.version} {_link(d.last_good.bundle, root, 'bundle')} (exit "
            f"{d.last_good.exit_code}), jax {d.first_bad.version} {_link(d.first_bad.bundle, root, 'bundle')} "
            f"(exit {d.first_bad.exit_code})"
        )
    if state.diff:
        out += _diff_lines(state.diff, root)
    if state.passes:
        p = state.passes
        culprit = ", ".join(f"`{c}`" for c in p.culprits) or "none"
        out.append(
            f"- Culprit HLO pass (disabling it makes the program right): {culprit}"
            + (f" ({p.how})" if p.how else "")
            + (f"; {p.note}" if p.note else "")
            + f"; bisection: {_link(p.folder, root)}"
            + "".join(f"; {_link(d, root, Path(d).name)}" for d in p.diffs)
        )
    if state.reduce and state.reduce.handed_over:
        r = state.reduce
        out.append(f"- Minimal module: {r.note} ({_link(r.handed_over, root, Path(r.handed_over).name)})")
    elif state.reduce:
        r = state.reduce
        out.append(
            f"- Minimal module: {r.instructions_before} -> {r.instructions_after} instructions in "
            f"{r.oracle_calls} oracle calls ({_link(r.reduced, root, 'reduced.hlo.txt')}, "
            f"{_link(r.issue, root, 'its ISSUE.md')}, {_link(r.bundle, root, 'bundle')})"
            + ("; FLAKY" if r.flaky else "")
        )
    if state.isolate:
        out.append(_isolate_line(state.isolate, root))
    return out


def _diff_lines(f: DiffFound, root: Path) -> list[str]:
    """The diff stage's finding: the two runs compared, the modules replayed, and precision when that is all."""
    lines: list[str] = []
    differ = [m.name for m in f.modules if m.optimized_differs]
    lines.append(
        f"- Diff: {_link(f.report, root, 'report.html')}, {_link(f.json, root, 'diff.json')}; optimised HLO "
        f"differs in {', '.join(differ) or 'no replayed module'}"
        + (f"; first divergence {f.first_divergence}" if f.first_divergence else "")
    )
    lines.append(
        f"- Modules replayed against the last good release ({_link(f.replay_bundle, root, 'replay')}): "
        + ", ".join(f"{m.name} {m.outcome}" for m in f.modules)
        + (f"; **{f.module_label}**: {f.mismatch}" if f.module_label else "")
    )
    if f.crash is not None:
        lines += _crash_lines(f, root)
    if f.precision_only:
        lines.append(
            f"- **Not a miscompile**: {', '.join(f.precision_only)} differ from the last good release only "
            "by precision: with their dots and convolutions at full precision the two agree (on a GPU, "
            "TF32 and like modes). Nothing to reduce or isolate."
        )
    return lines


def _crash_lines(f: DiffFound, root: Path) -> list[str]:
    """What crashed, in which module, and where: the crashing thread's top frames, the whole backtrace linked."""
    crash = f.crash
    assert crash is not None
    lines = [
        f"- **Crash**: module `{f.module_name}` dies by {crash.what()} on the first bad release; the last good "
        f"release runs the same module on the same inputs ({crash.reference})"
        + (
            f"; every thread's native frames: {_link(crash.backtrace, root, 'native-backtrace.txt')}"
            if crash.backtrace
            else ""
        )
    ]
    if crash.signal and crash.message:
        lines.append(f"- It said: `{crash.message}`")
    if crash.frames:
        lines += [
            "",
            "  Top native frames of the crashing thread:",
            "",
            "  ```",
            *(f"  {x}" for x in crash.frames),
            "  ```",
            "",
        ]
    return lines


def _isolate_line(i: IsolateFound, root: Path) -> str:
    if i.first_mismatch:
        what = f"{_instruction(i.first_mismatch)} mismatches on its own"
    elif i.first_mismatch_in_context:
        what = (
            f"no instruction mismatches on its own; the first whose value mismatches in context is "
            f"{_instruction(i.first_mismatch_in_context)} (the bug needs its context, e.g. a fusion or folding)"
        )
    else:
        from xlatools.reduce.isolate import NO_SINGLE

        what = NO_SINGLE
    form = f"; read from its {i.form}" if i.form else ""
    return f"- Isolation of {i.module}: {what} ({_link(i.file, root, 'isolate.json')}{form})"


def _demoted(markdown: str) -> list[str]:
    """Its headings one level down (it becomes a section of this file); code blocks untouched."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        fenced = fenced != line.startswith("```")
        lines.append("#" + line if line.startswith("#") and not fenced else line)
    return lines


def _handed_over_command(state: TriageState, root: Path) -> list[str]:
    """The replay of the module reduce could not reduce, as its StableHLO (with the run's inputs: the file is tied
    to its module's snapshot), against the last good release."""
    if not (state.reduce and state.reduce.handed_over and state.dumps):
        return []
    d = state.dumps
    replay = ["xlatools", "replay", os.path.relpath(state.reduce.handed_over, root), "--python", d.first_bad.python]
    return [
        f"The module (its StableHLO, with the run's inputs), jax {d.first_bad.version} against jax "
        f"{d.last_good.version} (exit 1: they differ):",
        "",
        "```sh",
        " ".join(shlex.quote(a) for a in [*replay, "--reference-python", d.last_good.python]),
        "```",
        "",
    ]


def _reduce_section(state: TriageState, root: Path, reduce_issue: str) -> list[str]:
    """The reduce bundle's own ISSUE.md as a section; its links (relative to that bundle) made relative to here."""
    body = reduce_issue.split("\n", 1)[1] if reduce_issue.startswith("# ") else reduce_issue
    if state.reduce:
        here = os.path.relpath(state.reduce.bundle, root)
        body = re.sub(r"\]\((?![a-z]+:|/)([^)]+)\)", lambda m: f"]({here}/{m.group(1)})", body)
    return ["## The minimal module (`xlatools reduce`)", "", *_demoted(body.strip()), ""]


def render(state: TriageState, program: str, command: list[str], reduce_issue: str | None) -> str:
    """ISSUE.md. `reduce_issue`: the reduce bundle's own ISSUE.md (minimal HLO, inputs, expected vs actual)."""
    root = Path(state.folder or ".")
    out = [
        _title(state, program),
        "",
        f"Found by `xlatools triage` (state: {_link(str(root / 'triage.json'), root)}).",
        "",
        "## Findings",
        "",
        *(_findings(state, root) or ["- nothing found yet"]),
        "",
        "## Stages",
        "",
        *_stage_rows(state),
        "",
    ]
    open_stages = [
        r
        for r in state.stages
        if r.status not in (StageStatus.DONE, StageStatus.SKIPPED) and r.stage != TriageStage.REPORT
    ]
    if open_stages:
        out += ["Stages not done say why above; run the same command again to retry them.", ""]
    if reduce_issue:
        out += _reduce_section(state, root, reduce_issue)
    out += [
        "## Reproduce",
        "",
        "The triage (the same command continues it; `--fresh` starts over):",
        "",
        "```sh",
        " ".join(shlex.quote(a) for a in ["xlatools", *command]),
        "```",
        "",
    ]
    out += _handed_over_command(state, root)
    if state.reduce and state.reduce.reduced and state.dumps:
        d, bundle = state.dumps, Path(state.reduce.bundle)
        replay = [
            "xlatools",
            "replay",
            os.path.relpath(state.reduce.reduced, root),
            "--inputs",
            os.path.relpath(bundle / "inputs.npz", root),
            "--python",
            d.first_bad.python,
            "--reference-python",
            d.last_good.python,
        ]
        crash = state.diff.crash if state.diff else None
        said = f"jax {d.first_bad.version} dies by {crash.what()}" if crash else "exit 1: they differ"
        out += [
            f"The minimal module, jax {d.first_bad.version} against jax {d.last_good.version} ({said}):",
            "",
            "```sh",
            " ".join(shlex.quote(a) for a in replay),
            "```",
            "",
        ]
    return "\n".join(out)
