"""`xlatools replay --isolate`: every instruction of a module run as its own module against the reference.

Each entry instruction (post order, after inlining jax's nested calls) becomes a module of
its own: operands are parameters fed with the values the full module computed for them in
the reference run; operands computed from constants alone stay constants (the compiler folds
them, and a parameter would hide that). The table says, per instruction, whether test and
reference agree; the first mismatching instruction is named with its operands. When no
instruction mismatches on its own, the bug needs context (a fusion of several instructions):
then the first instruction whose value, computed from the module's inputs, mismatches is named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from xlatools.reduce import edits
from xlatools.reduce.edits import Candidate
from xlatools.reduce.evaluate import Evaluator
from xlatools.reduce.oracle import Verdict
from xlatools.reduce.plan import ReducePlan


@dataclass
class Row:
    index: int
    name: str
    opcode: str
    shape: str
    operands: list[str]
    outcome: str  # match, mismatch, failed, skipped
    detail: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Isolation:
    module: str
    rows: list[Row] = field(default_factory=list)
    first_mismatch: Row | None = None
    in_context: Row | None = None  # the first instruction whose value mismatches, when none does alone
    oracle_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "rows": [r.to_json() for r in self.rows], "oracle_calls": self.oracle_calls,
                "first_mismatch": self.first_mismatch.to_json() if self.first_mismatch else None,
                "first_mismatch_in_context": self.in_context.to_json() if self.in_context else None}

    def table(self) -> str:
        lines = [f"{'#':>4}  {'instruction':28} {'opcode':18} {'shape':22} outcome    detail"]
        for r in self.rows:
            lines.append(f"{r.index:>4}  {r.name[:28]:28} {r.opcode[:18]:18} {r.shape[:22]:22} {r.outcome:10} {r.detail[:80]}")
        lines.append("")
        if self.first_mismatch:
            r = self.first_mismatch
            lines.append(f"first mismatching instruction: {r.name} = {r.opcode}({', '.join(r.operands)}) {r.shape}: {r.detail}")
        elif self.in_context:
            r = self.in_context
            lines.append("no instruction mismatches on its own; the first whose value (computed from the module's inputs) "
                         f"mismatches: {r.name} = {r.opcode}({', '.join(r.operands)}) {r.shape}: {r.detail} "
                         "(a bug that needs its context, e.g. a fusion)")
        else:
            lines.append("no instruction mismatches, alone or in context")
        return "\n".join(lines)


def constant_only(cand: Candidate) -> set[str]:
    """Entry instructions computed from constants alone (no parameter reaches them)."""
    out: set[str] = set()
    for inst in cand.module.entry.instructions:
        if inst.opcode == "constant" or (inst.opcode not in ("parameter", "rng", "rng-bit-generator", "custom-call")
                                         and inst.operands and all(o in out for o in inst.operands)):
            out.add(inst.name)
    return out


def _isolated(cand: Candidate, name: str, constants: set[str]) -> Candidate:
    alone = edits.reroot(cand, [name], f"isolate {name}")
    inst = alone.module.entry.get(name)
    feed = [o for o in dict.fromkeys(inst.operands) if o not in constants
            and alone.module.entry.get(o).opcode != "parameter"]
    return edits.to_parameters(alone, feed, f"isolate {name}") if feed else alone


def _row(index: int, inst, verdict: Verdict | None) -> Row:
    if verdict is None:
        outcome, detail = "skipped", "tuple-shaped value or operand"
    elif verdict.interesting is True:
        outcome, detail = "mismatch", verdict.reason
    elif verdict.interesting is None or "failed" in verdict.reason:
        outcome, detail = "failed", verdict.reason
    else:
        outcome, detail = "match", verdict.reason
    return Row(index, inst.name, inst.opcode, inst.shape, list(inst.operands), outcome, detail)


def isolate(plan: ReducePlan, evaluator: Evaluator, module: Candidate, record_values: Callable[[Candidate, list[str]], bool],
            progress: Callable[[str], None]) -> Isolation:
    """`record_values(exposing, names)`: records every entry value in the reference (StateStore.record_values)."""
    cand = edits.inline_all_calls(module)
    entry = cand.module.entry
    result = Isolation(plan.module.label)
    names = [i.name for i in entry.instructions if i.is_array and i.opcode != "parameter"]
    if not record_values(edits.reroot(cand, names, "expose every value"), names):
        from xlatools.errors import EnvironmentMissing

        raise EnvironmentMissing("the reference cannot run the module exposing every value; nothing to isolate")
    constants = constant_only(cand)
    shapes = {i.name: i for i in entry.instructions}
    todo = [i for i in entry.instructions if i.opcode not in ("parameter", "constant") and i.name not in constants]
    runnable = [i for i in todo if i.is_array and all(shapes[o].is_array for o in i.operands)]
    progress(f"isolating {len(runnable)} of {len(todo)} instructions of {plan.module.label}")
    calls = evaluator.counters.oracle_calls
    verdicts = dict(zip([i.name for i in runnable], evaluator.evaluate([_isolated(cand, i.name, constants) for i in runnable])))
    result.rows = [_row(k, inst, verdicts.get(inst.name)) for k, inst in enumerate(todo)]
    result.first_mismatch = next((r for r in result.rows if r.outcome == "mismatch"), None)
    if result.first_mismatch is None:
        result.in_context = _first_in_context(evaluator, cand, runnable)
    result.oracle_calls = evaluator.counters.oracle_calls - calls
    return result


def _first_in_context(evaluator: Evaluator, cand: Candidate, runnable: list) -> Row | None:
    """The first instruction (post order) whose value, computed from the module's inputs, mismatches."""
    batch = evaluator.plan.request.jobs
    for start in range(0, len(runnable), batch):
        group = runnable[start:start + batch]
        for inst, verdict in zip(group, evaluator.evaluate([edits.reroot(cand, [i.name], "cone") for i in group])):
            if verdict.interesting is True:
                return _row(start + group.index(inst), inst, verdict)
    return None
