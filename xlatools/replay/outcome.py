"""What a replay's runs add up to (pure): the module's outcome, the exit code, the terminal table.

The records themselves (RunRecord per target process, ModuleRecord per module) are in
xlatools.records.replay; they are re-exported here for the replay capability's own use."""

from __future__ import annotations

import re

from xlatools.console import columns
from xlatools.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_MISSING, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE
from xlatools.records.replay import Comparison, InputSource, ModuleRecord, RunRecord
from xlatools.vocab import ReplayOutcome

__all__ = [
    "ModuleRecord",
    "RunRecord",
    "describe_inputs",
    "exit_code",
    "finish_module",
    "missing_kernel",
    "module_outcome",
    "nonfinite_note",
    "replay_notes",
    "table",
    "tool_failure",
]


def module_outcome(runs: list[RunRecord]) -> tuple[ReplayOutcome, str | None]:
    """The first failure (the test's first, then the references'), else mismatch when any comparison
    failed: (outcome, the label of the run it comes from)."""
    for run in runs:
        if run.failure:
            return ReplayOutcome(run.failure), run.label
    for run in runs:
        if any(not c.ok for c in run.comparisons):
            return ReplayOutcome.MISMATCH, run.label
    return ReplayOutcome.OK, None


def finish_module(module: ModuleRecord) -> ModuleRecord:
    """Settle the module's outcome and repeat the test run's fingerprint and outputs and every
    run's comparisons at the module's level, as readers find them."""
    module.outcome, module.failed_run = module_outcome(module.runs)
    check = module.precision  # a test that matches its references at full precision (replay/precision.py)
    if check and check.verdict == ReplayOutcome.PRECISION and module.outcome == ReplayOutcome.MISMATCH:
        module.outcome = ReplayOutcome.PRECISION
    test = module.test
    module.fingerprint = test.fingerprint if test else None
    module.outputs = list(test.outputs) if test else []
    module.comparisons = [c for run in module.runs for c in run.comparisons]
    flagged = nonfinite_note(module)
    if flagged and flagged not in module.notes:
        module.notes.append(flagged)
    return module


NONFINITE_START = "outputs hold NaN/Inf"
NOTHING_COMPARED = (
    "nothing was compared: no module's snapshot holds a result and no reference was asked for, so "
    "`ok` says only that each module compiled and ran (dump with --preset dump:snapshots, or add "
    "--reference cpu / --reference-python PATH)"
)


def nonfinite_note(module: ModuleRecord) -> str | None:
    """A note naming the test outputs that hold NaN or Inf (flagged whatever the comparisons say)."""
    parts = [
        f"output {i}: " + ", ".join(f"{n} {what}" for n, what in ((o.nan, "NaN"), (o.inf, "Inf")) if n)
        for i, o in enumerate(module.outputs)
        if o.nan or o.inf
    ]
    return f"{NONFINITE_START} ({'; '.join(parts)})" if parts else None


def replay_notes(modules: list[ModuleRecord]) -> list[str]:
    """What the replay as a whole did not do: modules skipped, nothing compared."""
    notes = []
    skipped = [m.label for m in modules if m.outcome == ReplayOutcome.SKIPPED]
    if skipped:
        notes.append(f"skipped (replay runs single-device modules only): {', '.join(skipped)}")
    ran = [m for m in modules if m.outcome == ReplayOutcome.OK]
    if ran and not any(m.comparisons for m in modules):
        notes.append(NOTHING_COMPARED)
    return notes


TOOL_PHASES = ("start", "load", "inputs")
ABOUT_THE_MODULE = (ReplayOutcome.OK, ReplayOutcome.MISMATCH, ReplayOutcome.PRECISION, ReplayOutcome.INTERRUPTED)
PASSING = (ReplayOutcome.OK, ReplayOutcome.PRECISION)  # precision: the program's precision setting, not a failure


def tool_failure(module: ModuleRecord) -> str | None:
    """Why xlatools itself could not replay a module, or None when the outcome is about the module:
    cannot-run and input errors, and any failure before compilation began (loading, converting,
    preparing inputs). Such an outcome is never expected, reproduced or fixed."""
    if module.outcome in ABOUT_THE_MODULE:
        return None
    failed = next((run for run in module.runs if run.failure), module.test)
    phase = failed.phase if failed else None
    if module.outcome in (ReplayOutcome.CANNOT_RUN, ReplayOutcome.INPUT_ERROR) or phase in TOOL_PHASES:
        label, message = (failed.label, failed.message or "") if failed else ("test", "")
        return f"{module.outcome} ({label}, {phase}): {message}"[:400]
    return None


_MISSING_TARGET = re.compile(r"No registered implementation for (?:untyped |typed )?custom call to (\S+)")


def missing_kernel(module: ModuleRecord) -> str | None:
    """The custom-call target a module calls that this jaxlib does not have (kernels are renamed and removed
    between jaxlibs: 0.4.x's lapack_sgetrf is lapack_sgetrf_ffi later): the module cannot run here."""
    for run in module.runs:
        found = _MISSING_TARGET.search(run.message or "") if run.failure == ReplayOutcome.COMPILE_ERROR else None
        if found:
            return found.group(1)
    return None


def precision_only(modules: list[ModuleRecord]) -> list[str]:
    """The modules that differ only by precision, when that is all that differs (every other one ran ok);
    else nothing: a crash or a module that could not run is no precision finding."""
    if any(m.outcome not in (ReplayOutcome.OK, ReplayOutcome.PRECISION) for m in modules):
        return []
    return [m.label for m in modules if m.outcome == ReplayOutcome.PRECISION]


def mismatch_figures(module: ModuleRecord) -> str:
    """`8/8 elements differ (max abs error 0.5)`: the first comparison that failed (see `difference`)."""
    failed = next((c for c in module.comparisons if not c.ok), None)
    if failed is None:
        return "outputs differ"
    return difference(failed)


def difference(c: Comparison, noun: str = " elements") -> str:
    """How a failed comparison differs, in words that never read as no error: `3/8 elements differ (max abs error
    0.5)`, `8/8 elements differ (8 NaN on one side only)` (a NaN against a number has no error figure),
    `2/8 elements differ (2 integer or infinite values unequal)`."""
    parts = []
    others = c.mismatches - c.nan_mismatches
    if others and c.max_abs_error > 0:
        parts.append(f"max abs error {c.max_abs_error:.3g}")
    elif others:
        parts.append(f"{others} integer or infinite value{'s' if others != 1 else ''} unequal")
    if c.nan_mismatches:
        parts.append(f"{c.nan_mismatches} NaN on one side only")
    return f"{c.mismatches}/{c.elements}{noun} differ" + (f" ({', '.join(parts)})" if parts else "")


def exit_code(outcomes: list[ReplayOutcome]) -> int:
    """0 all ok (`precision`: they match at full precision; skipped modules aside); 2 inputs that do not fit the
    module; 124 a target timed out; 130 interrupted; 1 a finding about a module (mismatch, compile-error,
    runtime-error, crash); else 3 when a module cannot run here, or every module was skipped (nothing was replayed)."""
    if ReplayOutcome.INTERRUPTED in outcomes:
        return EXIT_INTERRUPTED
    if ReplayOutcome.INPUT_ERROR in outcomes:
        return EXIT_USAGE
    if ReplayOutcome.TIMEOUT in outcomes:
        return EXIT_TIMEOUT
    if any(o not in (*PASSING, ReplayOutcome.CANNOT_RUN, ReplayOutcome.SKIPPED) for o in outcomes):
        return EXIT_FAILED
    if ReplayOutcome.CANNOT_RUN in outcomes or (outcomes and all(o == ReplayOutcome.SKIPPED for o in outcomes)):
        return EXIT_MISSING
    return EXIT_OK


NO_RESULT_START = "the snapshot holds no result"
NO_RESULT = (
    f"{NO_RESULT_START} (XLA records none for an execution whose outputs alias donated inputs), so the outputs "
    "were not checked: compare with --reference-python or --reference cpu"
)


def _checks(module: ModuleRecord) -> str:
    parts = []
    for c in module.comparisons:
        if c.ok:
            parts.append(f"{c.against}: ok (max abs {c.max_abs_error:.2g})")
        elif c.message is not None:
            parts.append(f"{c.against}: {c.message}")
        else:
            parts.append(f"{c.against}: {difference(c, '')}")
    check = module.precision
    if check and check.verdict is not None:
        highest = (
            "; ".join(
                f"{c.against}: {'ok' if c.ok else f'{c.mismatches}/{c.elements} differ'} (max abs "
                f"{c.max_abs_error:.3g})"
                for c in check.highest
            )
            or "not compared"
        )
        parts = [
            f"as compiled {'; '.join(parts) or '-'}",
            f"at full precision {highest}",
            f"{len(check.raised)} raised, atol {check.atol:g} rtol {check.rtol:g}",
        ]
    elif check:
        parts.append(f"at full precision ({len(check.raised)} raised)")
    if not parts and any(note.startswith(NO_RESULT_START) for note in module.notes):
        parts.append("snapshot: no result recorded (donated buffers)")
    if any(note.startswith(NONFINITE_START) for note in module.notes):
        parts.append("NaN/Inf in outputs")
    return "; ".join(parts) or "-"


def table(modules: list[ModuleRecord]) -> str:
    rows = [("module", "outcome", "fingerprint", "compile s", "run s (min/median)", "checks")]
    for m in modules:
        test = m.test
        outcome = str(m.outcome) if m.failed_run in (None, "test") else f"{m.outcome} ({m.failed_run})"
        if test and test.signal:
            outcome += f" {test.signal}"
        timing = f"{test.run_s.min:.4g}/{test.run_s.median:.4g}" if test and test.run_s else "-"
        rows.append(
            (
                m.label,
                outcome,
                (test.fingerprint or "-")[:12] if test else "-",
                f"{test.compile_s:.3g}" if test and test.compile_s is not None else "-",
                timing,
                _checks(m),
            )
        )
    return columns(rows) + _inputs_lines(modules)


def describe_inputs(source: InputSource | None) -> str:
    """`random (seed 0)`, `snapshot (PATH)`, `recorded (PATH)`, `file (PATH)`, `zeros`: for summaries."""
    if source is None:
        return "-"
    detail = f"seed {source.seed}" if source.seed is not None else source.path
    return f"{source.kind} ({detail})" if detail else source.kind


def _inputs_lines(modules: list[ModuleRecord]) -> str:
    """Every module's input source under the table: made-up inputs are never silent."""
    lines = [f"\ninputs: {m.label}: {describe_inputs(m.input_source)}" for m in modules if m.input_source]
    return "".join(lines)
