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

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.errors import UsageError
from xlatools.records.reduce import ReduceRequest, Verdict
from xlatools.records.replay import IsolatedInstruction, Isolation, IsolationSummary, ReplayManifest, ReplayRequest
from xlatools.reduce import edits
from xlatools.reduce.edits import Candidate
from xlatools.reduce.evaluate import Evaluator
from xlatools.reduce.execute import PreparedReduce, original_candidate, prepare
from xlatools.reduce.hlo_text import Instruction
from xlatools.reduce.plan import ReducePlan
from xlatools.reduce.state import StateStore
from xlatools.vocab import Interest, IsolationOutcome, OracleKind

if TYPE_CHECKING:
    from xlatools.console import Reporter

ISOLATE_JSON, ISOLATE_TABLE = "isolate.json", "isolate.txt"


NO_SINGLE = (
    "no single instruction mismatches, alone or in context: where the module mismatches as a whole, the "
    "difference needs a pattern of several instructions (a rewrite of many into one library call, as oneDNN's "
    "are); next: `xlatools reduce` (its candidates keep such a pattern whole) or `xlatools bisect passes` "
    "(names the rewriting pass)"
)


def _describe(row: IsolatedInstruction) -> str:
    return f"{row.name} = {row.opcode}({', '.join(row.operands)}) {row.shape}: {row.detail}"


def table(result: Isolation) -> str:
    """The rows in post order, then the finding."""
    lines = [f"{'#':>4}  {'instruction':28} {'opcode':18} {'shape':22} outcome    detail"]
    for r in result.rows:
        lines.append(
            f"{r.index:>4}  {r.name[:28]:28} {r.opcode[:18]:18} {r.shape[:22]:22} {r.outcome:10} {r.detail[:80]}"
        )
    lines.append("")
    if result.first_mismatch:
        lines.append(f"first mismatching instruction: {_describe(result.first_mismatch)}")
    elif result.first_mismatch_in_context:
        lines.append(
            "no instruction mismatches on its own; the first whose value (computed from the module's inputs) "
            f"mismatches: {_describe(result.first_mismatch_in_context)} (a bug that needs its context, e.g. a fusion)"
        )
    else:
        lines.append(NO_SINGLE)
    return "\n".join(lines)


def constant_only(cand: Candidate) -> set[str]:
    """Entry instructions computed from constants alone (no parameter reaches them)."""
    out: set[str] = set()
    for inst in cand.module.entry.instructions:
        if inst.opcode == "constant" or (
            inst.opcode not in ("parameter", "rng", "rng-bit-generator", "custom-call")
            and inst.operands
            and all(o in out for o in inst.operands)
        ):
            out.add(inst.name)
    return out


def _isolated(cand: Candidate, name: str, constants: set[str]) -> Candidate:
    alone = edits.reroot(cand, [name], f"isolate {name}")
    inst = alone.module.entry.get(name)
    feed = [
        o
        for o in dict.fromkeys(inst.operands)
        if o not in constants and alone.module.entry.get(o).opcode != "parameter"
    ]
    return edits.to_parameters(alone, feed, f"isolate {name}") if feed else alone


def _row(index: int, inst: Instruction, verdict: Verdict | None) -> IsolatedInstruction:
    if verdict is None:
        outcome, detail = IsolationOutcome.SKIPPED, "tuple-shaped value or operand"
    elif verdict.interest == Interest.INTERESTING:
        outcome, detail = IsolationOutcome.MISMATCH, verdict.reason
    elif verdict.interest == Interest.SKIP or verdict.failure is not None:
        outcome, detail = IsolationOutcome.FAILED, verdict.reason
    else:
        outcome, detail = IsolationOutcome.MATCH, verdict.reason
    return IsolatedInstruction(
        index=index,
        name=inst.name,
        opcode=inst.opcode,
        shape=inst.shape,
        operands=list(inst.operands),
        outcome=outcome,
        detail=detail,
    )


def isolate(
    plan: ReducePlan,
    evaluator: Evaluator,
    module: Candidate,
    record_values: Callable[[Candidate, list[str]], bool],
    reporter: Reporter,
) -> Isolation:
    """`record_values(exposing, names)`: records every entry value in the reference (StateStore.record_values)."""
    cand = edits.inline_all_calls(module)
    entry = cand.module.entry
    names = [i.name for i in entry.instructions if i.is_array and i.opcode != "parameter"]
    if not record_values(edits.reroot(cand, names, "expose every value"), names):
        from xlatools.errors import EnvironmentMissing

        raise EnvironmentMissing("the reference cannot run the module exposing every value; nothing to isolate")
    constants = constant_only(cand)
    shapes = {i.name: i for i in entry.instructions}
    todo = [i for i in entry.instructions if i.opcode not in ("parameter", "constant") and i.name not in constants]
    runnable = [i for i in todo if i.is_array and all(shapes[o].is_array for o in i.operands)]
    reporter.step(f"isolating {len(runnable)} of {len(todo)} instructions of {plan.module.label}")
    calls = evaluator.counters.oracle_calls
    verdicts = dict(
        zip([i.name for i in runnable], evaluator.evaluate([_isolated(cand, i.name, constants) for i in runnable]))
    )
    rows = [_row(k, inst, verdicts.get(inst.name)) for k, inst in enumerate(todo)]
    first = next((r for r in rows if r.outcome == IsolationOutcome.MISMATCH), None)
    in_context = None if first else _first_in_context(evaluator, cand, todo, runnable)
    return Isolation(
        file=ISOLATE_JSON,
        module=plan.module.label,
        rows=rows,
        first_mismatch=first,
        first_mismatch_in_context=in_context,
        oracle_calls=evaluator.counters.oracle_calls - calls,
    )


def _first_in_context(
    evaluator: Evaluator, cand: Candidate, todo: list[Instruction], runnable: list[Instruction]
) -> IsolatedInstruction | None:
    """The first instruction (post order) whose value, computed from the module's inputs, mismatches."""
    batch = evaluator.plan.request.jobs
    for start in range(0, len(runnable), batch):
        group = runnable[start : start + batch]
        for inst, verdict in zip(group, evaluator.evaluate([edits.reroot(cand, [i.name], "cone") for i in group])):
            if verdict.interesting is True:
                return _row(todo.index(inst), inst, verdict)
    return None


def run_isolation(
    prepared: PreparedReduce, folder: Path, reporter: Reporter, caller_env: dict[str, str] | None = None
) -> Isolation:
    """Every instruction of the prepared module alone against the reference; work files under `folder`."""
    plan = prepared.plan
    store = StateStore.open(folder, "isolate", {"module": plan.module.files()}, fresh=True)
    gpu = prepared.targets[plan.test.python].gpu_platform()
    evaluator = Evaluator(plan, store.work, dict(os.environ if caller_env is None else caller_env), gpu)
    try:
        start = original_candidate(plan, evaluator, store.folder / "source")
        _check_text(plan, evaluator, start, store.folder / "source")
        found = isolate(plan, evaluator, start, lambda c, names: store.record_values(evaluator, c, names), reporter)
        found.form = loaded_form(store.folder / "source")
        return found
    finally:
        evaluator.close()


def _check_text(plan: ReducePlan, evaluator: Evaluator, start: Candidate, source: Path) -> None:
    """Isolation edits the module's HLO text: where that text does not compile the run's module and does not show
    the difference either, its instructions say nothing about the bug (TextNotTheRunsModule, naming the StableHLO)."""
    from xlatools.reduce.agreement import not_the_runs_module, text_not_the_runs_module

    differs = not_the_runs_module(plan, source)
    if differs is None:
        return
    verdict = evaluator.evaluate([start])[0]
    if verdict.interesting is not True:
        raise text_not_the_runs_module(
            plan,
            f"cannot isolate module {plan.module.label}",
            differs,
            f"isolating its instructions (the whole text: {verdict.reason})",
        )


def loaded_form(source: Path) -> str:
    """`HLO text (module_0001.jit_f.before_optimizations.txt)`: the form the isolated module was read from."""
    import json

    try:
        loaded = json.loads((source / "test" / "result.json").read_text()).get("loaded_from") or {}
    except (OSError, ValueError, AttributeError):
        return "-"
    from xlatools.replay.outcome import FORM_NAMES

    kind = str(loaded.get("kind", "-"))
    return f"{FORM_NAMES.get(kind, kind)} ({Path(str(loaded.get('path', '-'))).name})"


@dataclass
class IsolationRun:
    """`replay --isolate`: prepared with the replay (one module, one reference), run inside its bundle."""

    prepared: PreparedReduce

    @classmethod
    def prepare(cls, request: ReplayRequest) -> "IsolationRun":
        """The replay's module, interpreters, flags and inputs as a reduce plan, whose mismatch oracle judges each
        instruction; checked before anything runs."""
        if len(request.modules) > 1:
            raise UsageError("--isolate takes one module", hint="pick it with one --module ID|NAME")
        prepared = prepare(
            ReduceRequest(
                source=request.source,
                python=request.python,
                module=request.modules[0] if request.modules else None,
                references=request.references,
                reference_pythons=request.reference_pythons,
                inputs=request.inputs,
                seed=request.seed,
                atol=request.atol,
                rtol=request.rtol,
                xla_flags=request.xla_flags,
                disable_passes=request.disable_passes,
                platform=request.platform,
                timeout=request.timeout,
                precision=request.precision,
            )
        )
        if prepared.plan.oracle.kind != OracleKind.MISMATCH:
            raise UsageError("--isolate compares with a reference: add --reference cpu or --reference-python PY")
        return cls(prepared)

    def record_into(self, reporter: Reporter) -> Callable[[Path, ReplayManifest], None]:
        """What replay runs in its bundle after the modules: isolate.json, isolate.txt, the record's `isolation`."""

        def then(bundle: Path, record: ReplayManifest) -> None:
            from xlatools.fsutil import atomic_write_json, atomic_write_text
            from xlatools.records.base import to_json

            found = run_isolation(self.prepared, bundle / "isolate", reporter)
            found.file = str(bundle / ISOLATE_JSON)
            atomic_write_json(bundle / ISOLATE_JSON, to_json(found))
            from xlatools.replay.outcome import describe_inputs

            rendered = (
                table(found)
                + f"\ninputs: {describe_inputs(self.prepared.plan.record().input_source)}"
                + f"\nform: {found.form}"
            )
            atomic_write_text(bundle / ISOLATE_TABLE, rendered + "\n")
            reporter.info(rendered)
            record.isolation = IsolationSummary(**{f.name: getattr(found, f.name) for f in fields(IsolationSummary)})

        return then
