"""Typed records of a bundle diff: run level, modules, aligned passes, the first diverging pass."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from xlatools.compare.layers import EmittedDiff, MetricsDiff, OutputsDiff
from xlatools.compare.textdiff import TextDiff
from xlatools.records.base import BundleRecord
from xlatools.run.dump_stats import MemoryTotals

ChangeKind = Literal["added", "removed", "changed"]
MatchKind = Literal["name+fingerprint", "fingerprint", "name"]
# same: the pass in the same place on both sides; renamed: a different pass in its place;
# moved: the pass runs on both sides, at another place; only_a / only_b: one side only.
RowKind = Literal["same", "renamed", "moved", "only_a", "only_b"]
# A compared value: a JSON scalar or list (a manifest field, an XLA flag's value, a profile key's value).
Leaf = str | int | float | bool | list | None


@dataclass(frozen=True)
class FieldChange:
    key: str
    kind: ChangeKind
    a: Leaf = None
    b: Leaf = None


@dataclass
class RunDiff:
    """Manifest-level differences (empty lists when equal; `compared` False for bare dump folders)."""

    compared: bool
    fields: list[FieldChange] = field(default_factory=list)  # status, exit code, versions, devices, ...
    flags: list[FieldChange] = field(default_factory=list)  # XLA flags by name
    env: list[FieldChange] = field(default_factory=list)  # environment changes by variable
    profile: list[FieldChange] = field(default_factory=list)  # resolved profile, by dotted key
    durations: dict[str, float | None] = field(default_factory=dict)  # a, b

    def changes(self) -> int:
        return len(self.fields) + len(self.flags) + len(self.env) + len(self.profile)


@dataclass
class ModuleRef:
    """One module on one side, with what matching and the module table need.

    Fingerprints (canonical HLO) cost a parse of the text, so they are filled only where a raw
    hash cannot decide: byte-identical files have the same fingerprint without computing it."""

    id: int
    name: str
    digest_before: str | None  # raw content digest (FileStats.digest) of the before-optimisation text
    digest_after: str | None
    fingerprint_before: str | None
    fingerprint_after: str | None
    instructions_before: int | None
    instructions_after: int | None
    memory: MemoryTotals | None
    pass_steps: int


@dataclass(frozen=True)
class StepInfo:
    step: int
    pipeline: str
    pass_name: str
    file: str
    instructions: int | None
    changed: bool | None  # against the previous step (the first: against before_optimizations)


@dataclass
class PassRow:
    kind: RowKind
    a: StepInfo | None
    b: StepInfo | None
    same_hlo: bool | None = None  # canonical HLO after this row equal on both sides (up to the divergence)


@dataclass
class Divergence:
    """The first aligned pass after which the two modules' canonical HLO differ."""

    row: int  # index into PassAlignment.rows; -1: the modules differ before optimisation
    pipeline: str | None
    pass_a: str | None
    pass_b: str | None
    files: dict[str, str | None]  # a_before, a_after, b_before, b_after (paths relative to each dump)
    diffs: list[TextDiff] = field(default_factory=list)  # what the pass did on A, on B, and A-after vs B-after

    def file_lines(self) -> list[tuple[str, str]]:
        """("A"/"B", "before -> after", or the one file when both are the same) for each side that has files."""
        out = []
        for side, before, after in (
            ("A", self.files.get("a_before"), self.files.get("a_after")),
            ("B", self.files.get("b_before"), self.files.get("b_after")),
        ):
            if before or after:
                out.append(
                    (
                        side,
                        str(after or before) if before == after or not before or not after else f"{before} -> {after}",
                    )
                )
        return out

    @property
    def label(self) -> str:
        if self.row < 0:
            return "before optimisation (the input HLO differs)"
        names = (
            self.pass_a
            if self.pass_a == self.pass_b or self.pass_b is None
            else (self.pass_b if self.pass_a is None else f"{self.pass_a} (A) / {self.pass_b} (B)")
        )
        return f"{self.pipeline}/{names}" if self.pipeline else str(names)


@dataclass
class PassAlignment:
    rows: list[PassRow]
    divergence: Divergence | None
    note: str | None = None  # why there is no alignment (no per-pass dumps on one side)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.kind] = out.get(row.kind, 0) + 1
        return out


@dataclass
class ModuleDiff:
    match: MatchKind
    a: ModuleRef
    b: ModuleRef
    text: TextDiff | None  # optimised HLO, canonical; None when fingerprints are equal
    passes: PassAlignment | None
    # The optimised modules differ only in what autotuning chose (kernel configs, a fusion's kind): no pass divergence.
    autotuning_only: bool = False
    emitted: EmittedDiff | None = None  # LLVM IR, PTX, kernel MLIR, thunk sequences (None: neither side dumped any)
    outputs: OutputsDiff | None = None  # recorded executions (None: a side recorded none)

    @property
    def optimised(self) -> str:
        """same, differs, `autotuning differs` (two compiles that differ only in kernel configuration), or `-`
        (a side has no optimised HLO text: nothing was compared)."""
        if not self.output_compared:
            return "-"
        return "same" if self.same_output else "autotuning differs" if self.autotuning_only else "differs"

    @property
    def input(self) -> str:
        return "-" if not self.input_compared else "same" if self.same_input else "differs"

    @property
    def input_compared(self) -> bool:
        """Both sides dumped the module's HLO text before optimisation (a snapshots-only dump has none)."""
        return self.a.digest_before is not None and self.b.digest_before is not None

    @property
    def output_compared(self) -> bool:
        return self.a.digest_after is not None and self.b.digest_after is not None

    @property
    def same_input(self) -> bool:
        return _same(self.a.digest_before, self.b.digest_before, self.a.fingerprint_before, self.b.fingerprint_before)

    @property
    def same_output(self) -> bool:
        return _same(self.a.digest_after, self.b.digest_after, self.a.fingerprint_after, self.b.fingerprint_after)


def _same(digest_a: str | None, digest_b: str | None, print_a: str | None, print_b: str | None) -> bool:
    if digest_a is not None and digest_a == digest_b:
        return True
    return print_a is not None and print_a == print_b


@dataclass
class SideInfo:
    label: str  # "A" / "B"
    path: str  # what the user gave
    dump_dir: str | None
    kind: str  # run, replay, bisect-step, ... or "dump" for a bare dump folder
    manifest: BundleRecord | None  # not part of the diff's JSON
    totals: dict[str, int] = field(default_factory=dict)


@dataclass
class BundleDiff:
    a: SideInfo
    b: SideInfo
    run: RunDiff
    modules: list[ModuleDiff]
    only_a: list[ModuleRef]
    only_b: list[ModuleRef]
    notes: list[str] = field(default_factory=list)
    metrics: MetricsDiff | None = None  # what the runs measured per module (None: a side has no metrics)

    @property
    def modules_differ(self) -> bool:
        """True when a module is unmatched, or a matched pair differs in its optimised HLO beyond autotuning
        (pairs without optimised HLO text on both sides compare nothing there)."""
        return bool(self.only_a or self.only_b) or any(
            m.output_compared and not m.same_output and not m.autotuning_only for m in self.modules
        )

    def first_divergence(self) -> tuple[ModuleDiff, Divergence] | None:
        """The headline: the divergence of the module that matters. Only modules whose optimised HLO differs
        diverge; among them the program's own jitted functions come before jax's helper modules (jit_iota,
        jit_convert_element_type, ...), then id order."""
        from xlatools.replay.sources import is_helper

        candidates = [m for m in self.modules if m.passes and m.passes.divergence and not m.same_output]
        for module in sorted(candidates, key=lambda m: is_helper(m.a.name)):  # stable: id order within each group
            return module, module.passes.divergence
        return None

    def to_json(self) -> dict[str, Any]:  # the JSON of `diff --json` and bisect's diff.json
        from xlatools.records import to_json

        def plain(value, leave_out: tuple[str, ...] = ()):
            return {f.name: to_json(getattr(value, f.name)) for f in fields(value) if f.name not in leave_out}

        data = {"a": plain(self.a, ("manifest",)), "b": plain(self.b, ("manifest",)), **plain(self, ("a", "b"))}
        for module, raw in zip(self.modules, data["modules"]):
            raw["same_input"], raw["same_output"], raw["optimised"] = (
                module.same_input,
                module.same_output,
                module.optimised,
            )
            if module.passes and module.passes.divergence:
                raw["passes"]["divergence"]["label"] = module.passes.divergence.label
        data["modules_differ"] = self.modules_differ
        from xlatools.compare.where import where

        found = where(self)
        data["differs_in"] = {"headline": found.headline, "layers": [plain(layer) for layer in found.layers]}
        first = self.first_divergence()
        data["headline"] = (
            None
            if first is None
            else {
                "module": first[0].a.name,
                "id_a": first[0].a.id,
                "id_b": first[0].b.id,
                "pass": first[1].label,
                "pipeline": first[1].pipeline,
                "same_output": first[0].same_output,
            }
        )
        return data
