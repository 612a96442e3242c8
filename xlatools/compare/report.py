"""`write_report(bundles, out_html)`: one self-contained HTML page (inline CSS, JS and SVG) from Jinja2 templates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlatools.compare.chart import Chart, aligned_chart, module_chart
from xlatools.compare.logs import LogView, bundle_logs
from xlatools.compare.model import BundleDiff, Leaf
from xlatools.compare.passes import step_infos
from xlatools.compare.sides import Side, open_side
from xlatools.compare.metrics_view import amount, cell, metrics_section
from xlatools.compare.text import describe_side, memory, shared_pass_note
from xlatools.compare.where import where
from xlatools.compare.modules import Fingerprints, fill_fingerprints, module_refs
from xlatools.compare.replay_view import ReplayView, replay_view
from xlatools.records.replay import ReplayManifest
from xlatools.records.run import RunManifest
from xlatools.run.dumps import DumpIndex

MAX_CHARTS = 40  # per bundle; a dump with thousands of modules gets the first ones and a note


@dataclass
class ModuleRow:
    """One module in a side's table."""

    id: str  # 0010
    name: str
    before: int | None  # instructions before optimisation
    after: int | None
    passes: int  # per-pass steps dumped
    files: int
    bytes: int
    alloc: str  # allocated bytes, "-" when unknown
    fingerprint: str  # of the optimised HLO, first 12 digits


@dataclass
class SideReport:
    label: str
    title: str
    summary: list[tuple[str, Leaf]]
    modules: list[ModuleRow]
    charts: list[Chart]
    logs: list[LogView]
    notes: list[str] = field(default_factory=list)
    replay: ReplayView | None = None  # a replay bundle's own results (its section replaces the module table)
    metrics: list[tuple[str, ...]] = field(default_factory=list)  # what the run measured per module: header, rows
    metrics_notes: list[str] = field(default_factory=list)  # the mode, each process's peak RSS and CPU


def _summary(side: Side) -> list[tuple[str, Leaf]]:
    m = side.manifest
    run = m if isinstance(m, RunManifest) else None
    jax = run.jax if run else None
    rows: list[tuple[str, Leaf]] = [("kind", side.kind), ("path", str(side.path))]
    if m is not None:
        rows += [
            ("command", m.command),
            ("program", run.program.label if run and run.program else None),
            ("status", m.status),
            ("exit code", m.exit_code),
            ("started", m.started),
            ("duration (s)", run.duration_s if run else None),
            ("host", m.host.hostname if m.host else None),
            ("python", run.interpreter.python if run else None),
        ]
    if jax is not None:
        rows += [
            ("jax / jaxlib", f"{jax.jax} / {jax.jaxlib}" if jax.jax or jax.jaxlib else None),
            ("backend", jax.backend),
            ("devices", len(jax.devices) or None),
        ]
    if run is not None:
        rows += [
            ("presets", ", ".join(p.name for p in run.presets) or None),
            ("XLA flags", " ".join(run.xla_flags) or None),
        ]
    rows.append(("dump", str(side.index.root) if side.index else None))
    if run is not None and run.processes:  # a multi-process run: every process, and whose dump is shown
        rows += [
            (
                "processes",
                ", ".join(
                    f"p{p.id} {p.status} ({p.outcome})" + (" - failed first" if p.first_failure else "")
                    for p in run.processes
                ),
            ),
            ("dump of", side.process),
        ]
    return [(k, v) for k, v in rows if v not in (None, "")]


def _modules(index: DumpIndex, notes: list[str]) -> tuple[list[ModuleRow], list[Chart]]:
    """The module table and the pass timelines of one dump (notes: what they leave out)."""
    rows: list[ModuleRow] = []
    refs = module_refs(index)
    fill_fingerprints(refs, index, Fingerprints(), before=False, after=True)
    for ref in refs:
        module = index.modules[ref.id]
        rows.append(
            ModuleRow(
                f"{ref.id:04d}",
                ref.name,
                ref.instructions_before,
                ref.instructions_after,
                ref.pass_steps,
                len(module.files),
                module.bytes,
                memory(ref),
                (ref.fingerprint_after or "")[:12],
            )
        )
    with_steps = [index.modules[i] for i in sorted(index.modules) if index.modules[i].steps]
    charts = [module_chart(f"{m.id:04d} {m.name}", step_infos(index, m)) for m in with_steps[:MAX_CHARTS]]
    if len(with_steps) > MAX_CHARTS:
        notes.append(f"pass timelines of the first {MAX_CHARTS} of {len(with_steps)} modules with per-pass dumps")
    if not with_steps:
        notes.append("no per-pass dumps (run with --preset dump:passes for pass timelines)")
    return rows, charts


def side_report(side: Side) -> SideReport:
    notes: list[str] = []
    rows: list[ModuleRow] = []
    charts: list[Chart] = []
    replay = replay_view(side.manifest, side.bundle) if isinstance(side.manifest, ReplayManifest) else None
    if side.index is not None:
        rows, charts = _modules(side.index, notes)
    elif replay is None:
        notes.append("no XLA dump in this bundle")
    logs = bundle_logs(side.bundle) + (replay.logs if replay else [])
    report = SideReport(side.label, describe_side_title(side), _summary(side), rows, charts, logs, notes, replay)
    if isinstance(side.manifest, RunManifest) and side.manifest.metrics is not None:
        from xlatools.run.metrics_view import module_rows, process_lines

        report.metrics = module_rows(side.manifest.metrics)
        report.metrics_notes = process_lines(side.manifest.metrics)
    return report


def describe_side_title(side: Side) -> str:
    m = side.manifest
    program = m.program.label if isinstance(m, RunManifest) and m.program else None
    return f"{side.label}: {program or side.path}"


def diff_charts(diff: BundleDiff) -> dict[int, Chart]:
    """Aligned A/B charts of the matched modules that have per-pass dumps, by position in diff.modules."""
    out = {}
    for number, module in enumerate(diff.modules[:MAX_CHARTS]):
        if module.passes and module.passes.rows:
            row = module.passes.divergence.row if module.passes.divergence else None
            out[number] = aligned_chart(f"{module.a.name}: A vs B", module.passes.rows, row)
    return out


def breakable(value: object):  # -> markupsafe.Markup (jinja2's), imported with it
    """A long value (a command, flags, a path) that may wrap only after `=`, `,`, `:`, before `/` and at spaces:
    each piece stays whole (`.nw`), so `--xla_dump_to=` never splits after its `--` and no word splits inside."""
    import re

    from markupsafe import Markup, escape

    words = re.split(r"(\s+)", "" if value is None else str(value))
    out = []
    for word in words:
        if not word or word.isspace():
            out.append(" " if word else "")
            continue
        pieces = [p for p in re.split(r"(?<=[=,:])|(?<=.)(?=/)", word) if p]  # after = , : and before a /
        out.append("<wbr>".join(f'<span class="nw">{escape(p)}</span>' for p in pieces))
    return Markup("".join(out))


def render(sides: list[SideReport], diff: BundleDiff | None) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("xlatools.compare", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["breakable"] = breakable
    template = env.get_template("report.html.j2")
    first = diff.first_divergence() if diff else None
    return template.render(
        sides=sides,
        diff=diff,
        first=first,
        charts=diff_charts(diff) if diff else {},
        describe_side=describe_side,
        where=where(diff) if diff else None,
        shared_pass_note=shared_pass_note(diff) if diff else None,
        metrics=metrics_section(diff.metrics) if diff and diff.metrics and diff.metrics.modules else None,
        amount=amount,
        metric_cell=cell,
    )


def write_report(
    bundles: list[Path | str],
    out_html: Path | str,
    diff: BundleDiff | None = None,
    full: bool = False,
    process: int | None = None,
    modules: list[str] | None = None,
    option: str = "-o",
) -> Path:
    """Render one bundle (or two, with their diff, restricted to `modules` when given) into `out_html` (the
    path `option` named), written atomically (a device or FIFO there is written into, never replaced);
    `process`: of multi-process runs, whose dumps to show (default 0; every process's logs are shown)."""
    from xlatools.compare.diff import diff_sides
    from xlatools.fsutil import check_output, write_output
    from xlatools.redact import redact_text

    check_output(Path(out_html), option, parents=False)  # before the work: a missing folder is refused, not made
    sides = [open_side(Path(b), label, process) for b, label in zip(bundles, ("A", "B"))]
    if len(sides) == 2 and diff is None:
        diff = diff_sides(sides[0], sides[1], modules=modules, full=full)
    html = render([side_report(s) for s in sides], diff if len(sides) == 2 else None)
    out = Path(out_html)
    write_output(out, redact_text(html), option, parents=False)  # exit 2 naming the path and why, 3 on a full disk
    return out
