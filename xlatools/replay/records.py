"""Typed results of a replay: one RunRecord per target process, one ModuleRecord per module,
the outcome classes, the exit code and the terminal table (pure)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["ok", "mismatch", "compile-error", "runtime-error", "crash", "timeout", "input-error",
                  "cannot-run", "interrupted"]
FAILURES = ("compile-error", "runtime-error", "crash", "timeout", "input-error", "cannot-run")


@dataclass
class RunRecord:
    label: str
    python: str
    failure: str | None = None  # one of FAILURES, None when it ran to the end
    phase: str | None = None  # load, inputs, compile, run, compare: where it stopped
    message: str | None = None
    returncode: int | None = None
    signal: str | None = None
    log_tail: list[str] = field(default_factory=list)
    fingerprint: str | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    compile_s: float | None = None
    run_s: dict[str, Any] | None = None
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    loaded_from: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None
    device: dict[str, Any] | None = None
    duration_s: float | None = None
    dir: str | None = None


@dataclass
class ModuleRecord:
    name: str
    id: int | None
    files: dict[str, str]
    outcome: Outcome = "ok"
    failed_run: str | None = None
    runs: list[RunRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def test(self) -> RunRecord | None:
        return self.runs[0] if self.runs else None

    @property
    def comparisons(self) -> list[dict[str, Any]]:
        return [c for run in self.runs for c in run.comparisons]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        test = self.test
        data.update(fingerprint=test.fingerprint if test else None, outputs=test.outputs if test else [],
                    comparisons=self.comparisons)
        return data


def module_outcome(runs: list[RunRecord]) -> tuple[Outcome, str | None]:
    """The first failure (the test's first, then the references'), else mismatch when any comparison failed."""
    for run in runs:
        if run.failure:
            return run.failure, run.label  # type: ignore[return-value]
    for run in runs:
        if any(not c.get("ok") for c in run.comparisons):
            return "mismatch", run.label
    return "ok", None


TOOL_PHASES = ("start", "load", "inputs")


def tool_failure(module: dict[str, Any]) -> str | None:
    """Why xlatools itself could not replay a module (a replay manifest's module entry), or None when the
    outcome is about the module: cannot-run and input errors, and any failure before compilation began
    (loading, converting, preparing inputs). Such an outcome is never expected, reproduced or fixed."""
    if module.get("outcome") in ("ok", "mismatch", "interrupted"):
        return None
    runs = module.get("runs") or [{}]
    failed = next((r for r in runs if r.get("failure")), runs[0])
    if module.get("outcome") in ("cannot-run", "input-error") or failed.get("phase") in TOOL_PHASES:
        return f"{module.get('outcome')} ({failed.get('label', 'test')}, {failed.get('phase')}): {failed.get('message') or ''}"[:400]
    return None


_MISSING_TARGET = re.compile(r"No registered implementation for (?:untyped |typed )?custom call to (\S+)")


def missing_kernel(module: dict[str, Any]) -> str | None:
    """The custom-call target a module calls that this jaxlib does not have (kernels are renamed and removed
    between jaxlibs: 0.4.x's lapack_sgetrf is lapack_sgetrf_ffi later): the module cannot run here."""
    for run in module.get("runs") or []:
        found = _MISSING_TARGET.search(run.get("message") or "") if run.get("failure") == "compile-error" else None
        if found:
            return found.group(1)
    return None


def exit_code(outcomes: list[str]) -> int:
    """0 all ok; 2 inputs that do not fit the module; 124 a target timed out; 130 interrupted; 1 a finding
    about a module (mismatch, compile-error, runtime-error, crash); else 3 when a module cannot run here."""
    if "interrupted" in outcomes:
        return 130
    if "input-error" in outcomes:
        return 2
    if "timeout" in outcomes:
        return 124
    if any(o not in ("ok", "cannot-run") for o in outcomes):
        return 1
    return 3 if "cannot-run" in outcomes else 0


def _checks(module: ModuleRecord) -> str:
    parts = []
    for c in module.comparisons:
        if c.get("ok"):
            parts.append(f"{c['against']}: ok (max abs {c.get('max_abs_error', 0):.2g})")
        else:
            parts.append(f"{c['against']}: {c.get('mismatches', 0)}/{c.get('elements', 0)} differ"
                         f" (max abs {c.get('max_abs_error', 0):.3g})" if "message" not in c else f"{c['against']}: {c['message']}")
    if not parts and any(note.startswith("the snapshot holds no result") for note in module.notes):
        return "snapshot: no result recorded (donated buffers)"
    return "; ".join(parts) or "-"


def table(modules: list[ModuleRecord]) -> str:
    rows = [("module", "outcome", "fingerprint", "compile s", "run s (min/median)", "checks")]
    for m in modules:
        test = m.test
        outcome = m.outcome if m.failed_run in (None, "test") else f"{m.outcome} ({m.failed_run})"
        if test and test.signal:
            outcome += f" {test.signal}"
        timing = f"{test.run_s['min']:.4g}/{test.run_s['median']:.4g}" if test and test.run_s else "-"
        rows.append((m.name if m.id is None else f"{m.id:04d} {m.name}", outcome,
                     (test.fingerprint or "-")[:12] if test else "-",
                     f"{test.compile_s:.3g}" if test and test.compile_s is not None else "-", timing, _checks(m)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
