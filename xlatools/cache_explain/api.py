"""`xlatools explain-cache RUN_A [RUN_B]`: read the runs (their manifests and observer files), explain, report.

One run: each recompile (a function compiled again in the same process). Two runs: run B's recompiles, and each
compile of run B that missed jax's persistent cache although run A had compiled that function. The result is a
`CacheReport` (records/cache_report.py); `exit_code` says what a CI script reads (docs/cache.md).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import cast

from xlatools.cache_explain.explain import explain_misses, explain_recompiles
from xlatools.cache_explain.parts import Side
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.cache_report import CacheReport
from xlatools.records.compiles import Compile, CompileLog

MAX_HLO_BYTES = 64 * 1024 * 1024  # a bigger module's text is not compared
EXIT_NOTHING, EXIT_FOUND = 0, 1


def exit_code(report: CacheReport) -> int:
    """0: nothing recompiled and no miss to explain; 1: recompiles or misses found (each explained)."""
    return EXIT_FOUND if report.explanations else EXIT_NOTHING


def explain_cache(run_a: Path, run_b: Path | None = None) -> CacheReport:
    """Bad input (not a run bundle, a run without the observer): UsageError, exit 2. A run whose observer
    recorded no trace (a jax it cannot hook, the program killed before jax loaded): EnvironmentMissing, exit 3."""
    side_a, versions_a = _side(run_a, "A")
    report = CacheReport(run_a=str(run_a), run_b=str(run_b) if run_b else None)
    if run_b is None:
        report.explanations = explain_recompiles(side_a)
        report.notes = _cache_notes(side_a)
    else:
        side_b, versions_b = _side(run_b, "B")
        misses, notes = explain_misses(side_a, side_b)
        report.explanations = explain_recompiles(side_b) + misses
        report.notes = notes + _cache_notes(side_b)
        if versions_a != versions_b:
            report.notes.append(f"run A ran jax {versions_a}, run B jax {versions_b}")
    report.recompiles = sum(e.kind == "recompile" for e in report.explanations)
    report.misses = sum(e.kind == "miss" for e in report.explanations)
    report.summary = _summary(report, run_b is not None)
    return report


def _summary(report: CacheReport, two: bool) -> str:
    if not report.explanations:
        return "nothing recompiled" + ("; no miss in run B of a function run A compiled" if two else "")
    parts = [f"{report.recompiles} recompile(s)"] + [f"{report.misses} persistent-cache miss(es)"] * two
    return f"{', '.join(parts)}: each explained above"


def _side(path: Path, name: str) -> tuple[Side, str]:
    from xlatools.records import read_bundle
    from xlatools.records.base import manifest_path
    from xlatools.records.run import RUN_KINDS, RunManifest
    from xlatools.run.compile_events import read_compile_logs

    record = cast(RunManifest, read_bundle(path, kinds=RUN_KINDS))
    bundle = manifest_path(path).parent
    if record.metrics is None:
        raise UsageError(
            f"{path}: run {name} was not observed (--no-metrics, a frontend other than jax, or a Slurm job)",
            hint="run the program again with xlatools run (the observer is on by default)",
        )
    logs = read_compile_logs(bundle, record.metrics.folder)
    if not logs or not any(log.traced for log in logs if log.jax):
        if logs and not any(log.jax for log in logs):
            return Side(name=name, logs=logs, hlo=_hlo_reader(bundle)), "-"
        why = "; ".join(record.metrics.notes) or "its observer left no events"
        raise EnvironmentMissing(
            f"{path}: cannot explain run {name}: its traces were not recorded ({why})",
            hint="run it again with a jax the observer can hook (tried: 0.4.26, 0.4.30, 0.10.2, 0.12)",
        )
    versions = ", ".join(sorted({f"{log.jax} (jaxlib {log.jaxlib})" for log in logs if log.jax}))
    return Side(name=name, logs=logs, hlo=_hlo_reader(bundle), entry_exists=_entry_exists), versions


def _hlo_reader(bundle: Path):
    def read(compiled: Compile) -> str | None:
        if compiled.hlo is None:
            return None
        file = bundle / compiled.hlo
        try:
            if file.stat().st_size > MAX_HLO_BYTES:
                return None
            return file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    return read


def _entry_exists(folder: str, key: str) -> bool | None:
    """Is jax's entry `key` in `folder` now (jax 0.4.x names it KEY, newer KEY-cache)? None: cannot tell."""
    if not folder or not key or "://" in folder or not Path(folder).is_absolute():
        return None
    try:
        return any((Path(folder) / (key + suffix)).is_file() for suffix in ("-cache", ""))
    except OSError:
        return None


def _cache_notes(side: Side) -> list[str]:
    """What the persistent cache did in one run: compiles by state, misses not written by reason."""
    compiles = [c for log in side.logs for c in _compiles(log)]
    states: Counter[str] = Counter(c.cache.state for c in compiles if c.cache)
    if not compiles:
        return [f"run {side.name} compiled nothing"]
    if not states:
        return []
    words = (("hit", "hit(s)"), ("miss", "miss(es)"), ("off", "with the cache off"))
    counts = ", ".join(f"{states[s]} {word}" for s, word in words if states[s])
    unwritten = [c.cache for c in compiles if c.cache and c.cache.why and c.cache.written is not True]
    reasons = Counter(c.reason for c in unwritten)
    first = {c.reason: c.why for c in reversed(unwritten)}
    reasons_text = "; ".join(f"{count} x {first[reason]}" for reason, count in reasons.most_common(4))
    return [f"run {side.name}'s persistent cache: {len(compiles)} compile(s): {counts}"] + [
        f"run {side.name}, not cached: {reasons_text}"
    ] * bool(reasons_text)


def _compiles(log: CompileLog) -> list[Compile]:
    return [c for f in log.functions for c in f.compiles] + list(log.unattributed)
