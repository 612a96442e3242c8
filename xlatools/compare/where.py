"""Where two runs differ, layer by layer from the program down: the input HLO, the optimised HLO, the
emitted code, the recorded outputs. The deepest layer that still agrees says where to look: two runs
whose HLO is the same everywhere and whose LLVM IR is not "differ only in the emitted code"."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlatools.compare.model import BundleDiff, ModuleDiff


@dataclass
class Layer:
    name: str  # input HLO, optimised HLO, emitted code, outputs
    compared: int  # module pairs compared at this layer
    differ: list[str] = field(default_factory=list)  # labels of the modules that differ (`0050 jit_train_step`)
    note: str | None = None  # what this layer could not see, or what the differences have in common


@dataclass
class Where:
    layers: list[Layer]
    headline: str


def _modules(count: int) -> str:
    return f"{count} module{'' if count == 1 else 's'}"


def _label(m: ModuleDiff) -> str:
    return f"{m.b.id:04d} {m.b.name}" if m.a.id != m.b.id else f"{m.a.id:04d} {m.a.name}"


def _names(labels: list[str], most: int = 3) -> str:
    """The first few module names, the program's own before jax's helper modules (jit_iota, ...)."""
    from xlatools.replay.sources import is_helper

    names = sorted((label.split(" ", 1)[-1] for label in labels), key=is_helper)  # stable: id order within
    shown = ", ".join(names[:most])
    return shown + (f" and {len(labels) - most} more" if len(labels) > most else "")


def layers(diff: BundleDiff) -> list[Layer]:
    mods = diff.modules
    one_sided = [f"{r.id:04d} {r.name}" for r in diff.only_a + diff.only_b]
    emitted = [m for m in mods if m.emitted is not None]
    outputs = [m for m in mods if m.outputs is not None]
    code = Layer("emitted code", len(emitted), [_label(m) for m in emitted if m.emitted and m.emitted.differs])
    shape_only = [_label(m) for m in emitted if m.emitted and m.emitted.shape_only]
    if shape_only:
        code.note = f"{_modules(len(shape_only))}: only operands, names or order differ ({_names(shape_only)})"
    if mods and not emitted:
        code.note = "not dumped (jaxlib 0.10+ writes LLVM IR with every text dump; --preset dump:llvm adds more)"
    out = Layer("outputs", len(outputs), [_label(m) for m in outputs if m.outputs and m.outputs.differs])
    first = [_label(m) for m in outputs if m.outputs and m.outputs.differs_with_same_arguments]
    if first:
        out.note = f"{len(first)} with the same arguments ({_names(first)}): where the outputs start to differ"
    if mods and not outputs:
        out.note = "not recorded (run with --preset snapshots, or --record-inputs)"
    given = [m for m in mods if m.input_compared]
    optimised = [m for m in mods if m.output_compared]
    return [
        Layer("input HLO", len(given), [_label(m) for m in given if not m.same_input] + one_sided),
        Layer("optimised HLO", len(optimised), [_label(m) for m in optimised if m.optimised == "differs"]),
        code,
        out,
    ]


def where(diff: BundleDiff) -> Where:
    found = layers(diff)
    given, optimised, code, out = found
    if diff.a.dump_dir is None or diff.b.dump_dir is None:
        return Where(found, "no XLA dump on both sides: only the run level was compared")
    if given.differ:
        return Where(found, f"the input HLO differs in {_modules(len(given.differ))} ({_names(given.differ)})")
    if optimised.differ:
        return Where(
            found, f"the optimised HLO differs in {_modules(len(optimised.differ))} ({_names(optimised.differ)})"
        )
    if optimised.compared:
        every = "the 1 module" if optimised.compared == 1 else f"all {optimised.compared} modules"
        same, only = f"the optimised HLO of {every} is the same", "only "
    else:
        same, only = "no optimised HLO text to compare (run with --preset hlo)", ""
    outputs = (
        f"; the outputs of {_modules(len(out.differ))} differ" + (f", {out.note}" if out.note else "")
        if out.differ
        else "; the recorded outputs are the same"
        if out.compared
        else ""
    )
    real = [label for label in code.differ if not _shape_only(diff, label)]
    if real:
        flags = _flags(diff, real)
        return Where(
            found,
            f"{same}: A and B differ {only}in the emitted code, of {_modules(len(real))} ({_names(real)})"
            + (f", {flags}" if flags else "")
            + outputs,
        )
    if code.differ:
        return Where(
            found,
            f"{same}; the emitted code of {_modules(len(code.differ))} ({_names(code.differ)}) differs only in "
            f"operands, names or order (nondeterministic code generation, or a changed constant){outputs}",
        )
    if out.differ:
        code_too = ", and so is their emitted code" if code.compared else ""
        return Where(found, f"{same}{code_too}{outputs}")
    unseen = [layer.name for layer in (optimised, code, out) if not layer.compared]
    return Where(found, f"no difference found{' (not compared: ' + ', '.join(unseen) + ')' if unseen else ''}")


def _shape_only(diff: BundleDiff, label: str) -> bool:
    return any(_label(m) == label and m.emitted is not None and m.emitted.shape_only for m in diff.modules)


def _flags(diff: BundleDiff, labels: list[str]) -> str | None:
    """`numerics flags (...) on 55 instructions in A, 1,190 in B` over the modules whose code differs, when it
    differs there (per module its most frequent flag: the flags of one instruction come together)."""
    totals = {"a": 0, "b": 0}
    for m in diff.modules:
        if _label(m) in labels and m.emitted is not None:
            totals["a"] += max(m.emitted.flags_a.values(), default=0)
            totals["b"] += max(m.emitted.flags_b.values(), default=0)
    if totals["a"] == totals["b"]:
        return None
    return f"numerics flags (fast-math, approx, ftz) on {totals['a']:,} instructions in A, {totals['b']:,} in B"
