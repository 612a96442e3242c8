"""A replay bundle as the report shows it: what was asked (source, flags, tolerances, references, inputs),
each module's outcome with every run (interpreter, jaxlib, device, compile and run times, failure) and every
comparison (elements that differ, largest errors, NaN on one side), what full precision and the speed
comparison showed, and each run's log. Plain data in (records.replay), rows out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlatools.compare.logs import LogView, log_view
from xlatools.records.replay import Comparison, ModuleRecord, ReplayManifest, RunRecord

MAX_RUN_LOGS = 12  # the stderr logs of the first runs shown (a replay of many modules has many)


@dataclass
class RunRow:
    label: str  # test, reference-cpu, reference-python-1
    python: str
    jaxlib: str
    device: str
    flags: str
    compile_s: str
    run_s: str  # min / median over N executions
    result: str  # ok, or the failure with its phase and signal
    message: str


@dataclass
class CheckRow:
    run: str  # the run whose outputs were compared
    against: str  # snapshot, or the run they were compared with (the test's outputs, for a reference)
    ok: bool
    differ: str  # `103/1262`
    max_abs: str
    max_rel: str
    nan: int
    note: str


@dataclass
class ModuleView:
    label: str
    outcome: str
    failed_run: str | None
    inputs: str
    compiled_as_run: str
    runs: list[RunRow]
    checks: list[CheckRow]
    precision: str | None
    speed: str | None
    notes: list[str]

    @property
    def worst(self) -> CheckRow | None:
        """The failed check with the most elements that differ (the table's summary of the module)."""
        failed = [c for c in self.checks if not c.ok]
        return max(failed, key=lambda c: int(c.differ.split("/")[0]), default=None)


@dataclass
class ReplayView:
    request: list[tuple[str, str]]
    modules: list[ModuleView]
    isolation: str | None
    logs: list[LogView] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # outcome -> modules


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.3g}{unit}"


def _run_row(run: RunRecord, flags: dict[str, list[str]]) -> RunRow:
    versions = run.versions
    device = (run.device.kind or run.device.platform or "-") if run.device else "-"
    timing = "-"
    if run.run_s is not None:
        t = run.run_s
        timing = f"{t.min * 1e3:.3g} / {t.median * 1e3:.3g} ms ({t.count} execution{'s' if t.count != 1 else ''})"
    result = "ok" if run.failure is None else str(run.failure)
    if run.failure is not None:
        result += "".join(f", {x}" for x in (f"in {run.phase}" if run.phase else None, run.signal) if x)
    return RunRow(
        run.label,
        run.python,
        (versions.jaxlib or "-") if versions else "-",
        device,
        " ".join(flags.get(run.label, [])) or "-",
        _number(run.compile_s, " s"),
        timing,
        result,
        run.message or "",
    )


def _check_row(run: str, c: Comparison) -> CheckRow:
    note = c.message or ""
    shapes = [o.message for o in c.outputs if o.message]
    return CheckRow(
        run,
        c.against,
        c.ok,
        f"{c.mismatches}/{c.elements}",
        f"{c.max_abs_error:.3g}",
        f"{c.max_rel_error:.3g}",
        c.nan_mismatches,
        "; ".join([note, *shapes]).strip("; "),
    )


def _module(m: ModuleRecord, flags: dict[str, list[str]]) -> ModuleView:
    from xlatools.replay.outcome import describe_inputs

    speed = None
    if m.speed is not None:
        s = m.speed
        speed = f"{s.slowest} slowest, {s.ratio:.3g}x {s.fastest}" + (
            "" if s.slower else f" (within {s.margin:g}x: about the same)"
        )
    as_run = {True: "yes", False: "no (see notes)", None: "-"}[m.compiled_as_run]
    return ModuleView(
        m.label,
        str(m.outcome),
        m.failed_run,
        describe_inputs(m.input_source),
        as_run,
        [_run_row(r, flags) for r in m.runs],
        # A reference's comparisons are the test's outputs against it (`against` is the reference itself).
        [_check_row("test" if c.against == r.label else r.label, c) for r in m.runs for c in r.comparisons],
        m.precision.note if m.precision else None,
        speed,
        [n for n in m.notes if not m.precision or n != m.precision.note],
    )


def _request(m: ReplayManifest) -> list[tuple[str, str]]:
    plan = m.plan
    if plan is None:
        return [("source", m.source or "-")]
    r = plan.request
    rows = [
        ("source", f"{m.source or r.source} ({plan.source_kind})"),
        ("modules asked", ", ".join(r.modules) or ("every module" if r.include_all else "the default choice")),
        ("test interpreter", r.python),
        ("XLA flags (test)", " ".join(r.xla_flags) or "-"),
        ("references", ", ".join([*r.references, *r.reference_pythons]) or "-"),
        ("reference XLA flags", " ".join(r.reference_xla_flags) or "-"),
        ("tolerances", f"atol {r.atol:g}, rtol {r.rtol:g}"),
        ("precision", str(r.precision or "as compiled")),
        ("inputs", f"{r.inputs or 'snapshot, else random'} (seed {r.seed})"),
        ("executions", str(r.iterations)),
    ]
    rows += [("versions", f"jax {v.jax} / jaxlib {v.jaxlib} at {python}") for python, v in m.targets.items()]
    return rows + [("note", note) for note in plan.notes]


def replay_view(m: ReplayManifest, bundle: Path | None) -> ReplayView:
    flags = {run.label: list(run.xla_flags) for run in (m.plan.runs if m.plan else [])}
    modules = [_module(module, flags) for module in m.modules]
    counts: dict[str, int] = {}
    for module in modules:
        counts[module.outcome] = counts.get(module.outcome, 0) + 1
    isolation = None
    if m.isolation is not None:
        first = m.isolation.first_mismatch or m.isolation.first_mismatch_in_context
        isolation = f"{m.isolation.module}: " + (
            f"first instruction that mismatches: {first.name} ({first.opcode} {first.shape})" if first else "none"
        )
    return ReplayView(_request(m), modules, isolation, _logs(m, bundle), counts)


def _logs(m: ReplayManifest, bundle: Path | None) -> list[LogView]:
    """Each run's stderr.log that holds anything (in the run's folder inside the bundle), the first MAX_RUN_LOGS."""
    views: list[LogView] = []
    for module in m.modules:
        for run in module.runs:
            if run.dir is None or len(views) >= MAX_RUN_LOGS:
                continue
            path = Path(run.dir) / "stderr.log"
            if bundle is not None and not path.is_file():  # a moved bundle: its own modules/<module>/<run>/
                path = bundle / "modules" / Path(run.dir).parent.name / Path(run.dir).name / "stderr.log"
            if path.is_file() and path.stat().st_size:
                view = log_view(path)
                view.name = f"{module.label} {run.label}: stderr.log"
                views.append(view)
    return views
