"""Plain-text and Markdown renderings of a BundleDiff (terminal output, GitHub job summary)."""

from __future__ import annotations

from xlatools.compare.model import BundleDiff, FieldChange, ModuleDiff, ModuleRef, PassAlignment, SideInfo
from xlatools.compare.metrics_view import cell, metrics_lines
from xlatools.compare.where import where
from xlatools.console import columns
from xlatools.records.run import RunManifest


def _pair(a, b) -> str:
    a, b = ("-" if v is None else v for v in (a, b))
    return str(a) if a == b else f"{a} -> {b}"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    return columns(rows).splitlines()


def describe_side(side: SideInfo, labelled: bool = True) -> str:
    m = side.manifest
    bits = [side.kind]
    if isinstance(m, RunManifest) and m.jax.jaxlib:
        bits.append(f"jaxlib {m.jax.jaxlib}")
    if m is not None and m.status:
        bits.append(f"status {m.status}, exit {m.exit_code}")
    if side.totals:
        bits.append(f"{side.totals.get('modules')} modules, {side.totals.get('files')} files")
    return f"{side.label + ': ' if labelled else ''}{side.path} ({'; '.join(bits)})"


def change_line(group: str, change: FieldChange) -> str:
    if change.kind == "added":
        return f"{group} {change.key}: added in B ({change.b})"
    if change.kind == "removed":
        return f"{group} {change.key}: only in A ({change.a})"
    return f"{group} {change.key}: {change.a} -> {change.b}"


def memory(ref: ModuleRef) -> str:
    if ref.memory is None or ref.memory.allocated_bytes is None:
        return "-"
    return str(ref.memory.allocated_bytes)


def shared_pass_note(diff: BundleDiff) -> str | None:
    """The one note every module's pass column would repeat ("no per-pass dumps ..."): said once instead."""
    notes = {m.passes.note if m.passes else None for m in diff.modules}
    return notes.pop() if len(notes) == 1 and diff.modules and diff.modules[0].passes else None


def module_rows(diff: BundleDiff) -> list[tuple[str, ...]]:
    rows = [
        (
            "A id",
            "B id",
            "module",
            "matched by",
            "input",
            "optimised",
            "emitted code",
            "outputs",
            "instr before",
            "instr after",
            "alloc bytes",
            "first diverging pass",
        )
    ]
    shared = shared_pass_note(diff)
    for m in diff.modules:
        divergence = (
            m.passes.divergence.label
            if m.passes and m.passes.divergence
            else (m.passes.note if m.passes and m.passes.note and not shared else "-")
        )
        rows.append(
            (
                f"{m.a.id:04d}",
                f"{m.b.id:04d}",
                _pair(m.a.name, m.b.name),
                m.match,
                m.input,
                m.optimised,
                m.emitted.short() if m.emitted else "-",
                m.outputs.short() if m.outputs else "-",
                _pair(m.a.instructions_before, m.b.instructions_before),
                _pair(m.a.instructions_after, m.b.instructions_after),
                _pair(memory(m.a), memory(m.b)),
                divergence,
            )
        )
    return rows


def emitted_lines(m: ModuleDiff) -> list[str]:
    """A module's emitted code and recorded outputs, for `diff --module`."""
    out: list[str] = []
    code = m.emitted
    if code is not None:
        out.append(f"emitted code: {code.summary()} ({', '.join(f'{k} {v}' for k, v in sorted(code.kinds.items()))})")
        if code.normalised:
            out.append(
                "  normalised: " + "; ".join(f"{rule} ({n} files)" for rule, n in sorted(code.normalised.items()))
            )
        if code.flags_line():
            out.append(f"  {code.flags_line()}")
        out += [f"  {f.status}: {f.kind} {f.tail}" for f in code.changed]
        for text in code.diffs:
            out.append(f"--- {text.title}")
            out += text.lines + (["... (cut; --full shows everything)"] if text.truncated else [])
    if m.outputs is not None:
        out.append(f"outputs ({m.outputs.source}): {m.outputs.summary()}")
        for e in m.outputs.executions:
            args = {True: "same arguments", False: "other arguments", None: "arguments not compared"}[e.same_arguments]
            out.append(f"  execution {e.number}: {e.summary()}; {args}" + (f"; {e.note}" if e.note else ""))
        out += [f"  note: {n}" for n in m.outputs.notes]
    return out


def pass_rows(passes: PassAlignment) -> list[str]:
    rows = [("A step", "B step", "pipeline", "pass (A)", "pass (B)", "row", "changed A/B", "instr A/B", "same HLO")]
    yes = {True: "yes", False: "no", None: "-"}  # None: not compared (one side only, or no divergence to look for)
    for number, row in enumerate(passes.rows):
        step = row.a or row.b
        mark = "<- first divergence" if passes.divergence and passes.divergence.row == number else ""
        rows.append(
            (
                f"{row.a.step:04d}" if row.a else "-",
                f"{row.b.step:04d}" if row.b else "-",
                step.pipeline,
                row.a.pass_name if row.a else "-",
                row.b.pass_name if row.b else "-",
                row.kind,
                f"{yes[row.a.changed] if row.a else '-'}/{yes[row.b.changed] if row.b else '-'}",
                f"{row.a.instructions if row.a else '-'}/{row.b.instructions if row.b else '-'}",
                f"{yes[row.same_hlo]} {mark}".rstrip(),
            )
        )
    return _table(rows)


def module_detail(m: ModuleDiff) -> list[str]:
    out = [f"module {m.a.name}: A {m.a.id:04d} / B {m.b.id:04d}, matched by {m.match}"]
    if m.passes and m.passes.note:
        out.append(m.passes.note)
    elif m.passes:
        out += pass_rows(m.passes)
        if not m.passes.divergence and all(row.same_hlo is None for row in m.passes.rows):
            out.append(
                "same HLO: - (not compared: the optimised modules are the same, so there is no divergence to look for)"
                if m.same_output
                else "same HLO: - (not compared)"
            )
        if m.passes.divergence:
            d = m.passes.divergence
            out.append(f"first diverging pass: {d.label}")
            out += [f"  {side}: {files}" for side, files in d.file_lines()]
            for text in d.diffs:
                out.append(f"--- {text.title}")
                out += text.lines + (["... (cut; --full shows everything)"] if text.truncated else [])
    if m.text and not m.text.identical:
        out.append("--- optimised HLO, canonical")
        out += m.text.lines + (["... (cut; --full shows everything)"] if m.text.truncated else [])
    return out + emitted_lines(m)


def render_text(diff: BundleDiff, detail: bool = False) -> str:
    out = [describe_side(diff.a), describe_side(diff.b)]
    run = diff.run
    if run.compared:
        out.append(
            f"run: {run.changes()} differences; duration {run.durations.get('a')} s vs {run.durations.get('b')} s"
        )
        for group, changes in (("", run.fields), ("flag", run.flags), ("env", run.env), ("profile", run.profile)):
            out += ["  " + change_line(group, c).strip() for c in changes]
    out.append(f"modules: {len(diff.modules)} matched, {len(diff.only_a)} only in A, {len(diff.only_b)} only in B")
    if diff.modules:
        out += ["  " + line for line in _table(module_rows(diff))]
    for side, refs in (("A", diff.only_a), ("B", diff.only_b)):
        out += [f"  only in {side}: {r.id:04d} {r.name}" for r in refs]
    shared = shared_pass_note(diff)
    if shared:
        out.append(f"  passes: {shared}")
    first = diff.first_divergence()
    if first:
        out.append(f"first diverging pass: {first[0].a.name}: {first[1].label}")
    out.append(f"where A and B differ: {where(diff).headline}")
    if diff.metrics is not None and diff.metrics.modules:
        out += metrics_lines(diff.metrics)
    if detail:
        for module in diff.modules:
            out += [""] + module_detail(module)
    out += [f"note: {n}" for n in diff.notes]
    return "\n".join(out)


def markdown_summary(diff: BundleDiff, report: str | None = None) -> str:
    """A short job-summary block: what was compared and where it differs."""
    differing = [m for m in diff.modules if m.optimised == "differs"]
    tuned = len([m for m in diff.modules if m.autotuning_only])
    lines = [
        "### xlatools diff",
        "",
        f"- A: `{diff.a.path}`",
        f"- B: `{diff.b.path}`",
        f"- run: {diff.run.changes()} differences" if diff.run.compared else "- run: dump folders (no manifests)",
        f"- modules: {len(diff.modules)} matched, {len(differing)} differ after optimisation, "
        f"{len(diff.only_a)} only in A, {len(diff.only_b)} only in B"
        + (f", {tuned} differ only in autotuned kernel configuration" if tuned else ""),
    ]
    first = diff.first_divergence()
    if first:
        lines.append(f"- first diverging pass: `{first[0].a.name}`: `{first[1].label}`")
    lines.append(f"- where A and B differ: {where(diff).headline}")
    top = diff.metrics.modules[0] if diff.metrics and diff.metrics.modules else None
    if top is not None and top.change > 1:
        changed = ", ".join(f"{d.metric} {cell(d)}" for d in top.metrics if d.ranked and d.ratio != 1)
        lines.append(f"- largest metric change: `{top.name}` {changed}")
    if report:
        lines.append(f"- report: `{report}`")
    return "\n".join(lines) + "\n"
