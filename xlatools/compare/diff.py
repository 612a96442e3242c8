"""`diff_bundles(a, b)`: two bundles (or dump folders) compared at run, module and pass level."""

from __future__ import annotations

from pathlib import Path

from xlatools.compare.emitted import diff_emitted
from xlatools.compare.layers import MetricsDiff
from xlatools.compare.model import BundleDiff, ModuleDiff, SideInfo
from xlatools.compare.modules import (
    Fingerprints,
    canonical_file,
    fill_fingerprints,
    match_modules,
    module_refs,
    select_pairs,
)
from xlatools.compare.outputs import diff_outputs
from xlatools.compare.passes import align_passes
from xlatools.compare.rundiff import diff_runs
from xlatools.compare.sides import Side, open_side
from xlatools.compare.textdiff import DEFAULT_LIMIT, text_diff
from xlatools.errors import UsageError
from xlatools.records.run import RunManifest


def side_info(side: Side) -> SideInfo:
    index = side.index
    return SideInfo(
        side.label,
        str(side.path),
        str(index.root) if index else None,
        side.kind,
        side.manifest,
        index.totals() if index else {},
    )


def _module_diff(kind, ref_a, ref_b, a: Side, b: Side, prints: Fingerprints, full: bool, limit: int) -> ModuleDiff:
    module_a, module_b = a.index.modules[ref_a.id], b.index.modules[ref_b.id]
    if ref_a.digest_before != ref_b.digest_before:
        fill_fingerprints([ref_a], a.index, prints)
        fill_fingerprints([ref_b], b.index, prints)
    text = None
    if ref_a.digest_after != ref_b.digest_after:
        fill_fingerprints([ref_a], a.index, prints, before=False, after=True)
        fill_fingerprints([ref_b], b.index, prints, before=False, after=True)
    if not (ref_a.digest_after == ref_b.digest_after or ref_a.fingerprint_after == ref_b.fingerprint_after):
        canon_a = canonical_file(a.index.root / module_a.after_file) if module_a.after_file else None
        canon_b = canonical_file(b.index.root / module_b.after_file) if module_b.after_file else None
        text = text_diff(
            "optimised HLO (canonical)", canon_a, canon_b, f"A {module_a.name}", f"B {module_b.name}", full, limit
        )
    same_output = ref_a.digest_after == ref_b.digest_after or (
        ref_a.fingerprint_after is not None and ref_a.fingerprint_after == ref_b.fingerprint_after
    )
    tuned = not same_output and _autotuning_only(a.index.root, module_a.after_file, b.index.root, module_b.after_file)
    if tuned and text is not None:
        text.title = "optimised HLO (canonical): only autotuned kernel configuration differs"
    passes = align_passes((a.index, module_a), (b.index, module_b), full, prints, same_output or tuned)
    emitted = diff_emitted((a.index, module_a), (b.index, module_b), full)
    outputs = diff_outputs((a.index, module_a), (b.index, module_b))
    return ModuleDiff(kind, ref_a, ref_b, text, passes, tuned, emitted, outputs)


def _autotuning_only(root_a: Path, file_a: str | None, root_b: Path, file_b: str | None) -> bool:
    """Two optimised modules equal once what autotuning chooses is left out (run/hlo_canon.py)."""
    from xlatools.run.hlo_canon import kernel_neutral_fingerprint

    if not file_a or not file_b:
        return False
    try:
        text_a, text_b = (root_a / file_a).read_text(), (root_b / file_b).read_text()
    except (OSError, UnicodeDecodeError):
        return False
    return kernel_neutral_fingerprint(text_a) == kernel_neutral_fingerprint(text_b)


def diff_sides(
    a: Side, b: Side, modules: list[str] | None = None, full: bool = False, limit: int = DEFAULT_LIMIT
) -> BundleDiff:
    notes = [f"{s.label}: {s.path} has no XLA dump; run level only" for s in (a, b) if s.index is None]
    notes += [
        f"{s.label}: the dump of {s.process} (a multi-process run; --process N or BUNDLE/xla_dump/pN picks another)"
        for s in (a, b)
        if s.process
    ]
    refs_a, refs_b = module_refs(a.index), module_refs(b.index)
    prints = Fingerprints()
    sides = (a.index, b.index) if a.index and b.index else None
    pairs, only_a, only_b = match_modules(refs_a, refs_b, sides, prints)
    if modules:
        pairs = select_pairs(pairs, list(modules))
        _check_wanted(list(modules), pairs, refs_a + refs_b)
    diffs = [_module_diff(kind, ra, rb, a, b, prints, full, limit) for kind, ra, rb in pairs]
    result = BundleDiff(side_info(a), side_info(b), diff_runs(a, b), diffs, only_a, only_b, notes)
    result.metrics = _metrics(a, b, {ra.id: rb.id for _, ra, rb in pairs})
    return result


def _metrics(a: Side, b: Side, dump_pairs: dict[int, int]) -> MetricsDiff | None:
    """What both runs measured per module (None when a side is not a run, or measured nothing)."""
    from xlatools.compare.metricsdiff import diff_metrics

    metrics = [s.manifest.metrics for s in (a, b) if isinstance(s.manifest, RunManifest) and s.manifest.metrics]
    if len(metrics) != 2:
        return None
    return diff_metrics(metrics[0], metrics[1], dump_pairs, (a.index, b.index))


def _check_wanted(wanted: list[str], pairs, refs) -> None:
    """--module names no module at all: bad input. Named but unmatched: it is listed as one-sided."""
    known = {r.name for r in refs} | {str(r.id) for r in refs} | {f"{r.id:04d}" for r in refs}
    missing = [w for w in wanted if w not in known and not (w.isdigit() and str(int(w)) in known)]
    if missing:
        import difflib

        close = difflib.get_close_matches(missing[0], sorted({r.name for r in refs}), n=1)
        raise UsageError(
            f"no module {', '.join(missing)} in either dump",
            hint=(f"did you mean '{close[0]}'? " if close else "") + "`xlatools diff A B` lists the modules",
        )


def diff_bundles(
    a: Path | str,
    b: Path | str,
    modules: list[str] | None = None,
    full: bool = False,
    limit: int = DEFAULT_LIMIT,
    process: int | None = None,
) -> BundleDiff:
    """Compare two run/replay/bisect-step bundles (manifest.json + xla_dump/) or two XLA dump folders.

    `modules`: names or ids to restrict the module-level diff to; `full`: unbounded text diffs;
    `process`: of multi-process runs, whose dumps to compare (default 0)."""
    return diff_sides(open_side(Path(a), "A", process), open_side(Path(b), "B", process), modules, full, limit)


def write_diff(a: Path, b: Path, out_dir: Path) -> tuple[BundleDiff, Path]:
    """The diff of two bundles written as `out_dir`/diff.json and report.html: (the diff, the report)."""
    from xlatools.compare.report import write_report
    from xlatools.fsutil import atomic_write_json
    from xlatools.redact import redact

    diff = diff_bundles(a, b)
    note = depth_note(diff)
    if note:
        diff.notes.append(note)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out_dir / "diff.json", redact(diff.to_json()))
    return diff, Path(write_report([a, b], out_dir / "report.html", diff=diff))


def bisect_diff(
    last_good: Path, first_bad: Path, out_dir: Path
) -> dict:  # JSON for bisect's state file, as it stores it
    """A finished bisection's last-good vs first-bad: diff.json and report.html under `out_dir`,
    and what to say about them (called by `xlatools bisect` at the end of a search)."""
    diff, report = write_diff(last_good, first_bad, out_dir)
    first = diff.first_divergence()
    summary = None
    if first is not None:
        module, divergence = first
        summary = {
            "module": module.a.name if module.a else module.b.name,
            "pass": divergence.label,
            "pipeline": divergence.pipeline,
        }
    return {
        "json": str(out_dir / "diff.json"),
        "report": str(report),
        "modules_differ": diff.modules_differ,
        "first_divergence": summary,
        "note": depth_note(diff),
    }


def depth_note(diff: BundleDiff) -> str | None:
    """What a diff without dumps (or without per-pass dumps) cannot say, and the preset that makes it say it."""
    if diff.a.dump_dir is None or diff.b.dump_dir is None:
        return (
            "the steps ran without XLA dumps, so modules and passes were not compared (modules_differ says "
            "nothing): bisect with --preset hlo for the modules, or --preset dump:passes for the first diverging pass"
        )
    if diff.modules and all(m.passes is None or m.passes.note for m in diff.modules):
        return "no per-pass dumps: bisect with --preset dump:passes for the first diverging pass"
    return None
