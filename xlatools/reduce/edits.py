"""Edits of an HLO module (pure): each returns a new Candidate and leaves its input alone.

A Candidate is a module plus where its entry parameters get their values: an
original argument (`arg:K`) or the recorded value of an instruction of the original
module (`value:NAME`), so that a parameter that replaced an instruction is fed what
that instruction computed in the reference run. Instruction names are kept through
every edit, which keeps those sources valid. Every edit ends with dead-code removal.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

from xlatools.hlo.values import shape_without_layout
from xlatools.reduce.hlo_text import Computation, Instruction, Module

# Instructions kept even when nothing uses their value.
SIDE_EFFECTS = frozenset({"send", "send-done", "recv", "recv-done", "outfeed", "infeed", "after-all"})


@dataclass
class Candidate:
    module: Module
    inputs: dict[str, str]  # entry parameter name -> "arg:K" or "value:NAME"
    outputs: list[int | None] = field(default_factory=list)  # per output: the original output index, None once changed
    note: str = ""  # what this edit did, for the progress log

    def input_sources(self) -> list[str]:
        return [self.inputs[p.name] for p in self.module.entry.parameters()]

    def derive(self, module: Module, note: str, same_values: bool = False) -> "Candidate":
        outputs = self.outputs if same_values else [None] * len(self.outputs)
        return dce(Candidate(module, dict(self.inputs), list(outputs), note))


def initial(module: Module, output_count: int) -> Candidate:
    inputs = {p.name: f"arg:{p.parameter_number}" for p in module.entry.parameters()}
    return Candidate(module, inputs, list(range(output_count)), "input")


def _copy(module: Module) -> Module:
    return copy.deepcopy(module)


def shape_core(shape: str) -> str:
    """The shape without layouts (`f64[8]{0}` -> `f64[8]`), for comparing operand and result shapes."""
    return shape_without_layout(shape)


def _live(comp: Computation, keep_parameters: bool) -> set[str]:
    by_name = {i.name: i for i in comp.instructions}
    live: set[str] = set()
    work = [comp.root.name] + [i.name for i in comp.instructions if i.opcode in SIDE_EFFECTS]
    work += [i.name for i in comp.instructions if i.opcode == "parameter" and keep_parameters]
    while work:
        name = work.pop()
        if name in live or name not in by_name:
            continue
        live.add(name)
        work += by_name[name].operands
    return live


def dce(cand: Candidate) -> Candidate:
    """Remove dead instructions everywhere, unused entry parameters too (renumbering the rest)."""
    module = cand.module
    for comp in module.reachable():
        live = _live(comp, keep_parameters=not comp.entry)
        comp.instructions = [i for i in comp.instructions if i.name in live]
    entry = module.entry
    renumber = {p.name: n for n, p in enumerate(entry.parameters())}
    entry.instructions = [
        replace(i, payload=str(renumber[i.name])) if i.name in renumber else i for i in entry.instructions
    ]
    cand.inputs = {name: cand.inputs[name] for name in renumber if name in cand.inputs}
    module.computations = module.reachable()
    return cand


def _set_root(comp: Computation, name: str) -> None:
    comp.instructions = [replace(i, root=(i.name == name)) for i in comp.instructions]


def _unique(comp: Computation, base: str) -> str:
    names = {i.name for i in comp.instructions}
    candidate, n = base, 0
    while candidate in names:
        n += 1
        candidate = f"{base}.{n}"
    return candidate


def reroot(cand: Candidate, names: list[str], note: str, same_values: bool = False) -> Candidate:
    """Entry root := the one instruction named, or a new tuple of several."""
    module = _copy(cand.module)
    entry = module.entry
    by_name = {i.name: i for i in entry.instructions}
    if len(names) == 1:
        _set_root(entry, names[0])
    else:
        shape = "(" + ", ".join(by_name[n].shape for n in names) + ")"
        tuple_name = _unique(entry, "reduce.outputs")
        entry.instructions = [replace(i, root=False) for i in entry.instructions]
        entry.instructions.append(Instruction(tuple_name, shape, "tuple", list(names), root=True))
    result = cand.derive(module, note, same_values)
    if same_values:
        origin = dict(zip(_outputs_of(cand.module), cand.outputs))
        result.outputs = [origin.get(n) for n in names]
    else:
        result.outputs = [None] * len(names)
    return result


def _outputs_of(module: Module) -> list[str]:
    root = module.entry.root
    return list(root.operands) if root.opcode == "tuple" else [root.name]


def output_names(cand: Candidate) -> list[str]:
    return _outputs_of(cand.module)


def keep_outputs(cand: Candidate, indices: list[int]) -> Candidate:
    names = _outputs_of(cand.module)
    kept = [names[i] for i in indices]
    return reroot(cand, kept, f"keep output(s) {', '.join(map(str, indices))} of {len(names)}", same_values=True)


def cut_after(cand: Candidate, count: int) -> Candidate:
    """Keep the first `count` entry instructions; the values they hand to the rest become the outputs."""
    entry = cand.module.entry
    kept = entry.instructions[:count]
    kept_names = {i.name for i in kept}
    dropped = entry.instructions[count:]
    live_out = [i.name for i in kept if i.root or any(i.name in d.operands for d in dropped)]
    live_out = [n for n in live_out if entry.get(n).opcode not in ("parameter", "constant")] or [kept[-1].name]
    module = _copy(cand.module)
    module.entry.instructions = [i for i in module.entry.instructions if i.name in kept_names]
    pruned = Candidate(module, dict(cand.inputs), [None] * len(cand.outputs))
    return reroot(pruned, live_out, f"cut after {count} of {len(entry.instructions)} entry instructions")


def _replace_instruction(
    cand: Candidate, comp_name: str, name: str, new: list[Instruction], note: str, source: str | None = None
) -> Candidate:
    module = _copy(cand.module)
    comp = module.computation(comp_name)
    index = next(k for k, i in enumerate(comp.instructions) if i.name == name)
    old = comp.instructions[index]
    new[-1] = replace(new[-1], root=old.root)
    comp.instructions[index : index + 1] = new
    result = cand.derive(module, note)
    if source:
        result.inputs[name] = source
    return dce(result)


def to_parameters(cand: Candidate, names: list[str], note: str) -> Candidate:
    """Entry instructions -> new parameters fed with their recorded values."""
    module = _copy(cand.module)
    entry = module.entry
    wanted = set(names)
    next_number = len(entry.parameters())
    out = []
    for inst in entry.instructions:
        if inst.name in wanted:
            inst = Instruction(inst.name, inst.shape, "parameter", [], str(next_number), root=inst.root)
            next_number += 1
        out.append(inst)
    entry.instructions = out
    result = cand.derive(module, note)
    for name in names:
        result.inputs[name] = f"value:{name}"
    return dce(result)


def zero_literal(shape: str) -> str:
    dtype = shape.split("[", 1)[0]
    if dtype == "pred":
        return "false"
    if dtype.startswith("c"):
        return "(0, 0)"
    return "0"


def to_constant(cand: Candidate, comp_name: str, name: str, literal: str | None = None) -> Candidate:
    """An instruction -> a constant: its recorded scalar (splat) value, or zero; broadcast when not a scalar."""
    comp = cand.module.computation(comp_name)
    inst = comp.get(name)
    dtype = inst.shape.split("[", 1)[0]
    value = literal if literal is not None else zero_literal(inst.shape)
    if shape_core(inst.shape).endswith("[]"):
        new = [Instruction(name, inst.shape, "constant", [], value)]
    else:
        scalar = _unique(comp, f"{name}.splat")
        new = [
            Instruction(scalar, f"{dtype}[]", "constant", [], value),
            Instruction(name, inst.shape, "broadcast", [scalar], "", ", dimensions={}"),
        ]
    what = "its recorded value " + value if literal is not None else "zero"
    return _replace_instruction(cand, comp_name, name, new, f"{name} -> constant ({what})")


def bypass(cand: Candidate, comp_name: str, name: str, operand: str) -> Candidate:
    """Users of `name` use its operand `operand` (of the same shape) instead."""
    module = _copy(cand.module)
    comp = module.computation(comp_name)
    was_root = comp.get(name).root
    comp.instructions = [
        replace(i, operands=[operand if o == name else o for o in i.operands]) for i in comp.instructions
    ]
    if was_root:
        _set_root(comp, operand)
    return cand.derive(module, f"{name} -> its operand {operand}")


def inline_call(cand: Candidate, comp_name: str, name: str) -> Candidate:
    """Replace a `call` by the body of the computation it calls."""
    module = _copy(cand.module)
    comp = module.computation(comp_name)
    call = comp.get(name)
    callee = module.computation(call.called[0])
    taken = {i.name for i in comp.instructions}
    renames: dict[str, str] = {}
    for p in callee.parameters():
        renames[p.name] = call.operands[p.parameter_number or 0]
    body = []
    for inst in callee.instructions:
        if inst.opcode == "parameter":
            continue
        new_name = inst.name if inst.name not in taken else f"{inst.name}.{name}"
        while new_name in taken:
            new_name += ".i"
        taken.add(new_name)
        renames[inst.name] = new_name
        body.append(replace(inst, name=new_name, root=False, operands=[renames.get(o, o) for o in inst.operands]))
    result_name = renames[callee.root.name]
    index = next(k for k, i in enumerate(comp.instructions) if i.name == name)
    comp.instructions[index:index] = body
    comp.instructions = [
        replace(i, operands=[result_name if o == name else o for o in i.operands]) for i in comp.instructions
    ]
    if call.root:
        _set_root(comp, result_name)
    return cand.derive(module, f"inline {name} (calls {callee.name})", same_values=True)


def calls_in(module: Module) -> list[tuple[str, str]]:
    """(computation, instruction) of every `call` the entry reaches."""
    return [(c.name, i.name) for c in module.reachable() for i in c.instructions if i.opcode == "call"]


def inline_all_calls(cand: Candidate, limit: int = 500) -> Candidate:
    for _ in range(limit):
        calls = calls_in(cand.module)
        if not calls:
            break
        cand = inline_call(cand, *calls[0])
    cand.note = "inline every call"
    return cand
