"""Reduction strategies: each turns the current best candidate into smaller ones and keeps what stays interesting.

The full strategy, repeated until a round changes nothing:
  inline  every `call` replaced by the body it calls (one try);
  outputs the entry ROOT tuple cut to one output (mismatching outputs first), else ddmin over outputs;
  cut     the shortest prefix of the entry's post order that is still interesting, its live values
          as the new outputs (hlo_bisect's prefix search, then outputs again);
  front   the longest prefix that can become parameters fed with recorded values (the mirror cut);
  each    instruction by instruction, in every computation: a parameter with its recorded value
          (entry only), its recorded value as a constant (when all elements are equal), one of its
          operands of the same shape, a zero constant.
`ddmin` alone (for comparison): delta debugging over the entry's instructions, a removed
instruction becoming a parameter with its recorded value (or dropped from the ROOT tuple).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from xlatools.reduce import edits
from xlatools.reduce.edits import Candidate
from xlatools.search import ddmin, largest_interesting, smallest_interesting
from xlatools.vocab import OracleKind, ReduceStrategy

if TYPE_CHECKING:
    from xlatools.reduce.reducer import Reducer

SEMANTICS_KEEPING = ("inline", "outputs")  # the only phases a recorded-result oracle allows


def phase_inline(r: "Reducer") -> None:
    if edits.calls_in(r.best.module):
        r.try_first([edits.inline_all_calls(r.best)])


def phase_outputs(r: "Reducer") -> None:
    names = edits.output_names(r.best)
    if len(names) < 2 or r.best.module.entry.root.opcode != "tuple":
        return
    comparison = r.best_verdict.comparison
    rows = comparison.outputs if comparison else []
    order = sorted(range(len(names)), key=lambda i: -rows[i].mismatches if i < len(rows) else 0)
    if r.try_first([edits.keep_outputs(r.best, [i]) for i in order]):
        return

    def test(subsets: list[list[int]]) -> list[bool]:
        return r.interesting([edits.keep_outputs(r.best, s) for s in subsets])

    kept = ddmin(list(range(len(names))), test, r.batch, r.out_of_time)
    if len(kept) < len(names):
        r.try_first([edits.keep_outputs(r.best, kept)])


def phase_cut(r: "Reducer") -> None:
    total = len(r.best.module.entry.instructions)
    if total < 3:
        return
    base = r.best

    def test(counts: list[int]) -> list[bool]:
        return r.interesting([edits.cut_after(base, k) for k in counts])

    count = smallest_interesting(total, test, r.batch, low=1, stop=r.out_of_time)
    if count < total:
        r.try_first([edits.cut_after(base, count)])
        phase_outputs(r)


def _front_names(cand: Candidate, count: int) -> list[str]:
    """Instructions among the first `count` of the entry that later instructions use (not parameters or constants)."""
    entry = cand.module.entry
    head, tail = entry.instructions[:count], entry.instructions[count:]
    used = {o for i in tail for o in i.operands}
    return [i.name for i in head if i.name in used and i.opcode not in ("parameter", "constant") and i.is_array]


def phase_front(r: "Reducer") -> None:
    total = len(r.best.module.entry.instructions)
    if total < 3 or not r.ensure_values([i.name for i in r.best.module.entry.instructions]):
        return
    base = r.best

    def make(count: int) -> Candidate:
        names = _front_names(base, count)
        return (
            edits.to_parameters(base, names, f"the first {count} entry instructions -> parameters") if names else base
        )

    count = largest_interesting(
        total - 1, lambda counts: r.interesting([make(k) for k in counts]), r.batch, r.out_of_time
    )
    if count > 0 and _front_names(base, count):
        r.try_first([make(count)])


def alternatives(r: "Reducer", comp_name: str, name: str) -> list[Candidate]:
    """Smaller stand-ins for one instruction, the most likely to keep the bug first."""
    cand = r.best
    comp = cand.module.computation(comp_name)
    inst = comp.get(name)
    out: list[Candidate] = []
    if inst is None or inst.opcode == "parameter" or (inst.root and comp.entry and inst.opcode == "tuple"):
        return out
    if inst.opcode == "call":
        out.append(edits.inline_call(cand, comp_name, name))
    array = inst.is_array and not (inst.root and comp.entry)
    literal = r.splat(name) if comp.entry and array else None
    if literal is not None and inst.opcode not in ("constant", "broadcast"):
        out.append(edits.to_constant(cand, comp_name, name, literal))
    if comp.entry and array and inst.opcode != "constant" and r.ensure_values([name]):
        out.append(edits.to_parameters(cand, [name], f"{name} -> parameter (its recorded value)"))
    shapes = {i.name: edits.shape_core(i.shape) for i in comp.instructions}
    for operand in dict.fromkeys(inst.operands):
        if shapes.get(operand) == edits.shape_core(inst.shape):
            out.append(edits.bypass(cand, comp_name, name, operand))
    if inst.is_array and inst.opcode not in ("constant",) and not (inst.root and comp.entry):
        out.append(edits.to_constant(cand, comp_name, name))
    return out


def phase_each(r: "Reducer") -> None:
    """One pass over every instruction of every computation (re-listing after each success)."""
    done: set[tuple[str, str]] = set()
    while not r.out_of_time():
        todo = [
            (c.name, i.name)
            for c in reversed(r.best.module.reachable())
            for i in c.instructions
            if (c.name, i.name) not in done
        ]
        if not todo:
            return
        comp_name, name = todo[0]
        done.add((comp_name, name))
        r.try_first(alternatives(r, comp_name, name))


def phase_ddmin(r: "Reducer") -> None:
    """Delta debugging over the entry's instructions (the baseline the benchmark compares with)."""
    entry = r.best.module.entry
    root = entry.root
    items = [i.name for i in entry.instructions if i.opcode != "parameter" and i is not root]
    if not items:
        return
    values = r.ensure_values(items)
    base = r.best

    def remove(keep: list[str]) -> Candidate:
        gone = set(items) - set(keep)
        cand = base
        if root.opcode == "tuple":
            outputs = edits.output_names(cand)
            kept = [k for k, n in enumerate(outputs) if n not in gone]
            if kept and len(kept) < len(outputs):
                cand = edits.keep_outputs(cand, kept)
        live = {i.name for i in cand.module.entry.instructions}
        names = [n for n in items if n in gone and n in live and cand.module.entry.get(n).is_array]
        if names and values:
            cand = edits.to_parameters(cand, names, f"ddmin: {len(names)} instruction(s) -> parameters")
        elif names:
            for name in names:
                cand = edits.to_constant(cand, entry.name, name)
        return cand

    kept = ddmin(items, lambda configs: r.interesting([remove(k) for k in configs]), r.batch, r.out_of_time)
    if len(kept) < len(items):
        r.try_first([remove(kept)])


PHASES: dict[str, Callable[["Reducer"], None]] = {
    "inline": phase_inline,
    "outputs": phase_outputs,
    "cut": phase_cut,
    "front": phase_front,
    "each": phase_each,
    "ddmin": phase_ddmin,
}
FULL = ("inline", "outputs", "cut", "outputs", "front", "each")


def phases_for(strategy: ReduceStrategy, oracle_kind: OracleKind) -> tuple[str, ...]:
    if oracle_kind == OracleKind.RECORDED:
        return SEMANTICS_KEEPING
    return ("ddmin",) if strategy == ReduceStrategy.DDMIN else FULL
