"""`write_report(bundles, out_html)`: one self-contained HTML page (inline CSS, JS and SVG) from Jinja2 templates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlatools.compare.chart import Chart, aligned_chart, module_chart
from xlatools.compare.logs import LogView, bundle_logs
from xlatools.compare.model import BundleDiff
from xlatools.compare.passes import step_infos
from xlatools.compare.sides import Side, open_side
from xlatools.compare.text import describe_side, memory
from xlatools.errors import UsageError
from xlatools.compare.modules import Fingerprints, fill_fingerprints, module_refs

MAX_CHARTS = 40  # per bundle; a dump with thousands of modules gets the first ones and a note


@dataclass
class SideReport:
    label: str
    title: str
    summary: list[tuple[str, Any]]
    modules: list[dict[str, Any]]
    charts: list[Chart]
    logs: list[LogView]
    notes: list[str] = field(default_factory=list)


def _summary(side: Side) -> list[tuple[str, Any]]:
    m = side.manifest or {}
    jax = m.get("jax") or {}
    devices = jax.get("devices") or []
    rows = [
        ("kind", side.kind), ("path", str(side.path)), ("command", m.get("command")),
        ("program", (m.get("program") or {}).get("label")), ("status", m.get("status")),
        ("exit code", m.get("exit_code")), ("started", m.get("started")), ("duration (s)", m.get("duration_s")),
        ("host", (m.get("host") or {}).get("hostname")), ("python", (m.get("interpreter") or {}).get("python")),
        ("jax / jaxlib", f"{jax.get('jax')} / {jax.get('jaxlib')}" if jax else None),
        ("backend", jax.get("backend")), ("devices", len(devices) if devices else None),
        ("presets", ", ".join(str(p.get("name")) for p in m.get("presets") or [] if isinstance(p, dict)) or None),
        ("XLA flags", " ".join(m.get("xla_flags") or []) or None),
        ("dump", str(side.index.root) if side.index else None),
    ]
    return [(k, v) for k, v in rows if v not in (None, "")]


def side_report(side: Side) -> SideReport:
    index = side.index
    notes: list[str] = []
    rows, charts = [], []
    if index is None:
        notes.append("no XLA dump in this bundle")
    else:
        refs = module_refs(index)
        fill_fingerprints(refs, index, Fingerprints(), before=False, after=True)
        for ref in refs:
            module = index.modules[ref.id]
            rows.append({"id": f"{ref.id:04d}", "name": ref.name, "before": ref.instructions_before,
                         "after": ref.instructions_after, "passes": ref.pass_steps, "files": len(module.files),
                         "bytes": module.bytes, "alloc": memory(ref), "fingerprint": (ref.fingerprint_after or "")[:12]})
        with_steps = [index.modules[i] for i in sorted(index.modules) if index.modules[i].steps]
        for module in with_steps[:MAX_CHARTS]:
            charts.append(module_chart(f"{module.id:04d} {module.name}", step_infos(index, module)))
        if len(with_steps) > MAX_CHARTS:
            notes.append(f"pass timelines of the first {MAX_CHARTS} of {len(with_steps)} modules with per-pass dumps")
        if not with_steps:
            notes.append("no per-pass dumps (run with --preset dump:passes for pass timelines)")
    title = describe_side_title(side)
    return SideReport(side.label, title, _summary(side), rows, charts, bundle_logs(side.bundle), notes)


def describe_side_title(side: Side) -> str:
    m = side.manifest or {}
    return f"{side.label}: {(m.get('program') or {}).get('label') or side.path}"


def diff_charts(diff: BundleDiff) -> dict[int, Chart]:
    """Aligned A/B charts of the matched modules that have per-pass dumps, by position in diff.modules."""
    out = {}
    for number, module in enumerate(diff.modules[:MAX_CHARTS]):
        if module.passes and module.passes.rows:
            row = module.passes.divergence.row if module.passes.divergence else None
            out[number] = aligned_chart(f"{module.a.name}: A vs B", module.passes.rows, row)
    return out


def render(sides: list[SideReport], diff: BundleDiff | None) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("xlatools.compare", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    template = env.get_template("report.html.j2")
    first = diff.first_divergence() if diff else None
    return template.render(sides=sides, diff=diff, first=first, charts=diff_charts(diff) if diff else {},
                           describe_side=describe_side)


def write_report(bundles: list[Path | str], out_html: Path | str, diff: BundleDiff | None = None,
                 full: bool = False, modules: list[str] | None = None) -> Path:
    """Render one bundle (or two, with their diff, restricted to `modules` when given) into `out_html`, atomically."""
    from xlatools.compare.diff import diff_sides
    from xlatools.fsutil import atomic_write_text

    sides = [open_side(Path(b), label) for b, label in zip(bundles, ("A", "B"))]
    if len(sides) == 2 and diff is None:
        diff = diff_sides(sides[0], sides[1], modules=modules, full=full)
    html = render([side_report(s) for s in sides], diff if len(sides) == 2 else None)
    out = Path(out_html)
    try:
        atomic_write_text(out, html)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out}: {exc.strerror}", hint="pick another -o/--html path") from None
    return out
