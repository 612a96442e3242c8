"""What a replay's runs add up to (pure): the module's outcome, the exit code, the terminal table.

The records themselves (RunRecord per target process, ModuleRecord per module) are in
xlatools.records.replay; they are re-exported here for the replay capability's own use."""

from __future__ import annotations

import re
from pathlib import Path

from xlatools.console import columns
from xlatools.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_MISSING, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE
from xlatools.records.replay import Comparison, InputSource, ModuleRecord, RunRecord
from xlatools.vocab import ReplayOutcome

__all__ = [
    "ModuleRecord",
    "against_a_reference",
    "judged_against",
    "judging",
    "listed_only",
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


def judging(runs: list[RunRecord]) -> list[Comparison]:
    """The comparisons a verdict rests on: the references' when a reference compared the module, else the test's
    own (the snapshot's recorded result, or reduce's recorded values). A snapshot's result was computed by the run
    under suspicion: beside a reference it is listed (`listed_only`), never the judge of whether a jaxlib is right."""
    referenced = [c for run in runs[1:] for c in run.comparisons]
    return referenced or [c for run in runs[:1] for c in run.comparisons]


def listed_only(runs: list[RunRecord]) -> list[Comparison]:
    """The comparisons shown but not judged by: the test's own, when a reference compared the module."""
    judged = {id(c) for c in judging(runs)}
    return [c for run in runs[:1] for c in run.comparisons if id(c) not in judged]


def module_outcome(runs: list[RunRecord]) -> tuple[ReplayOutcome, str | None]:
    """The first failure (the test's first, then the references'), else mismatch when a judging comparison
    (`judging`) failed: (outcome, the label of the run it comes from)."""
    for run in runs:
        if run.failure:
            return ReplayOutcome(run.failure), run.label
    failing = {id(c) for c in judging(runs) if not c.ok}
    for run in runs:
        if any(id(c) in failing for c in run.comparisons):
            return ReplayOutcome.MISMATCH, run.label
    return ReplayOutcome.OK, None


def judged_against(module: ModuleRecord) -> list[str]:
    """What a module's outcome was judged against: the comparisons that failed for `mismatch` and `precision`
    (`snapshot`, `reference-python-1`, ...), every judging comparison for `ok` (none: nothing was compared), the
    run that failed for a failure (`test`, `reference-cpu`, ...)."""
    if module.outcome in (ReplayOutcome.MISMATCH, ReplayOutcome.PRECISION):
        return [c.against for c in judging(module.runs) if not c.ok]
    if module.outcome == ReplayOutcome.OK:
        return [c.against for c in judging(module.runs)]
    return [module.failed_run] if module.failed_run else []


def against_a_reference(module: ModuleRecord) -> bool:
    """A mismatch with a reference's outputs (never only with the snapshot the run recorded)."""
    return module.outcome == ReplayOutcome.MISMATCH and any(
        not c.ok for run in module.runs[1:] for c in run.comparisons
    )


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
    for note in (nonfinite_note(module), listed_note(module)):
        if note and note not in module.notes:
            module.notes.append(note)
    from xlatools.replay.speed import compare_speed

    module.speed = compare_speed(
        module
    )  # its rough-comparison note stays in the record: a mismatch hunt has no use for it
    return module


LISTED_START = "listed, not judged:"


def listed_note(module: ModuleRecord) -> str | None:
    """A note for each comparison that differs but does not judge (the snapshot beside a reference)."""
    differing = [c for c in listed_only(module.runs) if not c.ok]
    if not differing:
        return None
    shown = "; ".join(
        f"against the {c.against} "
        + (c.message or f"{c.mismatches}/{c.elements} elements differ (max abs error {c.max_abs_error:.3g})")
        for c in differing
    )
    return (
        f"{LISTED_START} {shown}; the snapshot holds what the run computed (the jaxlib under suspicion), so the "
        "reference's comparison judges"
    )


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
    """`8/8 elements differ (max abs error 0.5)`: the first judging comparison that failed (see `difference`)."""
    failed = next((c for c in judging(module.runs) if not c.ok), None)
    return difference(failed) if failed is not None else "outputs differ"


def difference(c: Comparison, noun: str = " elements") -> str:
    """How a failed comparison differs, in words that never read as no error: `3/8 elements differ (max abs error
    0.5)`, `8/8 elements differ (8 NaN on one side only)` (a NaN against a number has no error figure),
    `2/8 elements differ (2 integer or infinite values unequal)`."""
    others = c.mismatches - c.nan_mismatches
    unequal = f"{others} integer or infinite value{'s' if others != 1 else ''} unequal"
    parts = [f"max abs error {c.max_abs_error:.3g}" if c.max_abs_error > 0 else unequal] if others else []
    parts += [f"{c.nan_mismatches} NaN on one side only"] if c.nan_mismatches else []
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
# Why, in the table's few words, keyed by what the note says.
_NO_RESULT_SHORT = (("never finished", "the run died first"), ("donated", "donated buffers"))


def no_result_note(aliased: bool | None, run_death: str | None, references: bool) -> str:
    """Why the snapshot holds no result, from what the bundle shows: the run died (an execution that never
    finished writes none), the module donates its inputs (XLA records none when outputs alias them), or
    neither is known. The advice to compare with a reference only when none was given."""
    if run_death:
        why = f"the run {run_death}: an execution that never finished leaves its arguments and no result"
    elif aliased:
        why = "its outputs alias donated inputs, and XLA records no result for such an execution"
    elif aliased is False:
        why = "XLA recorded none for this execution; the module donates nothing (no input/output alias)"
    else:
        why = "XLA records none for an execution whose outputs alias donated inputs, or one that never finished"
    advice = "" if references else ": compare with --reference-python or --reference cpu"
    return f"{NO_RESULT_START} ({why}), so the outputs were not checked against it{advice}"


def _checks(module: ModuleRecord) -> str:
    parts = []
    listed = {c.against for c in listed_only(module.runs)}  # by label: the table may be of a manifest read back
    for c in module.comparisons:
        if c.ok:
            part = f"{c.against}: ok (max abs {c.max_abs_error:.2g})"
        elif c.message is not None:
            part = f"{c.against}: {c.message}"
        else:
            part = f"{c.against}: {difference(c, '')}"
        parts.append(part + (" (listed, not judged)" if c.against in listed else ""))
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
    if not parts and module.test is not None and module.test.failure:  # the references still ran: say how they ended
        parts += [f"{run.label}: {run.failure or 'ok'}" for run in module.runs[1:]]
    note = next((note for note in module.notes if note.startswith(NO_RESULT_START)), None)
    if note is not None and not module.comparisons:
        why = next((short for key, short in _NO_RESULT_SHORT if key in note), "none recorded")
        parts.append(f"snapshot: no result ({why})")
    if any(note.startswith(NONFINITE_START) for note in module.notes):
        parts.append("NaN/Inf in outputs")
    return "; ".join(parts) or "-"


def table(modules: list[ModuleRecord]) -> str:
    from xlatools.replay.speed import speed_cell

    timed = any(m.speed for m in modules)  # test and --reference-python both timed: which one is slower
    rows = [
        (
            "module",
            "outcome",
            "fingerprint",
            "compile s",
            "run s (min/median)",
            *(("slower",) if timed else ()),
            "checks",
        )
    ]
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
                *((speed_cell(m),) if timed else ()),
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
    """Every module's input source under the table: made-up inputs are never silent; and the form it was compiled
    from (StableHLO, HLO text or proto), and whether that compiled the run's own module."""
    lines = [f"\ninputs: {m.label}: {describe_inputs(m.input_source)}" for m in modules if m.input_source]
    return "".join(lines) + "".join(f"\nform: {m.label}: {said}" for m in modules if (said := describe_form(m)))


FORM_NAMES = {"mlir": "StableHLO", "text": "HLO text", "proto": "HLO proto"}


def describe_form(module: ModuleRecord) -> str | None:
    """`StableHLO (jax_ir1_jit_f_compile.mlir), the run's own module`: what the test compiled, for summaries."""
    loaded = module.test.loaded_from if module.test else None
    if loaded is None:
        return None
    said = f"{FORM_NAMES.get(loaded.kind, loaded.kind)} ({Path(loaded.path).name})"
    if module.compiled_as_run is not None:
        said += ", the run's own module" if module.compiled_as_run else ", not the run's module (see its notes)"
    return said
