"""Records of what diff finds below the HLO: emitted code, recorded outputs, per-module metrics and the
buffers of a module whose memory grew. Plain dataclasses (the diff's JSON is made from their fields)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xlatools.compare.textdiff import TextDiff

CodeStatus = Literal["same", "noise", "same_shape", "differs", "only_a", "only_b"]
CHANGED: tuple[CodeStatus, ...] = ("differs", "same_shape", "only_a", "only_b")


@dataclass
class CodeFile:
    tail: str  # the file's name after the module's
    kind: str  # LLVM IR, PTX, kernel MLIR, Triton IR, thunk sequence
    status: CodeStatus
    a: str | None  # path in A's dump
    b: str | None
    normalised: list[str] = field(default_factory=list)  # the rules that removed something from either side


@dataclass
class EmittedDiff:
    """What the emitted code of a module pair shows (None on a ModuleDiff: neither side dumped any)."""

    files: int = 0  # file pairs and one-sided files
    counts: dict[str, int] = field(default_factory=dict)  # status -> files
    kinds: dict[str, int] = field(default_factory=dict)  # kind -> files
    changed: list[CodeFile] = field(default_factory=list)  # files not same or noise (the first MAX_LISTED)
    normalised: dict[str, int] = field(default_factory=dict)  # rule -> files where it removed something
    flags_a: dict[str, int] = field(default_factory=dict)  # numerics flag -> instructions, in files whose bytes differ
    flags_b: dict[str, int] = field(default_factory=dict)
    diffs: list[TextDiff] = field(default_factory=list)  # normalised diffs of the first files that differ
    bytes_only: int = 0  # files too large to normalise: compared by their bytes

    def count(self, *statuses: str) -> int:
        return sum(self.counts.get(s, 0) for s in statuses)

    @property
    def differs(self) -> bool:
        """Code that differs beyond noise (same_shape included: it may be a changed constant)."""
        return self.count(*CHANGED) > 0

    def summary(self) -> str:
        """`same (29 files; 4 after normalising)`, `40 of 96 files differ (2 only in operands, names or order)`."""
        if not self.files:
            return "-"
        changed = self.count(*CHANGED)
        if not changed:
            noise = self.count("noise")
            return f"same ({self.files} files" + (f"; {noise} after normalising)" if noise else ")")
        text = f"{changed} of {self.files} files differ"
        if self.count("same_shape"):
            text += f" ({self.count('same_shape')} only in operands, names or order)"
        if self.count("only_a", "only_b"):
            text += f"; {self.count('only_a')} only in A, {self.count('only_b')} only in B"
        return text

    def short(self) -> str:
        """For a table cell: `same`, `40/96 differ`, `2/29 operands only`."""
        changed = self.count(*CHANGED)
        if not changed:
            return "same" if self.files else "-"
        return f"{changed}/{self.files} " + ("operands only" if self.shape_only else "differ")

    @property
    def shape_only(self) -> bool:
        """Every changed file holds the same instructions with other operands, names or order."""
        return self.differs and self.count(*CHANGED) == self.count("same_shape")

    def flags_line(self) -> str | None:
        """`fast-math flags: A none, B reassoc 30, nsz 30, contract 30` when the sides differ in them."""
        if self.flags_a == self.flags_b:
            return None

        def side(flags: dict[str, int]) -> str:
            return ", ".join(f"{k} {v}" for k, v in sorted(flags.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"

        return f"numerics flags (instructions): A {side(self.flags_a)}; B {side(self.flags_b)}"


@dataclass
class OutputDelta:
    """One output of one execution on both sides."""

    index: int
    dtype: str
    shape: list[int]
    elements: int
    differ: int | None  # elements that differ (None: not counted, e.g. too large; see note)
    max_abs_error: float | None = None
    nan_mismatches: int = 0  # NaN on one side only
    note: str | None = None  # "shape differs: [4] vs [8]"


@dataclass
class ExecutionDelta:
    """The n-th execution of a module on each side (its snapshot: the arguments and the result)."""

    number: int  # 1: the first execution on each side
    a: str  # the snapshot file, relative to its bundle (or dump)
    b: str
    same_arguments: bool | None  # None: not compared
    same_outputs: bool
    elements: int = 0
    differ: int | None = 0
    max_abs_error: float | None = None
    nan_mismatches: int = 0
    outputs: list[OutputDelta] = field(default_factory=list)  # the outputs that differ
    note: str | None = None

    def summary(self) -> str:
        if self.same_outputs:
            return "same outputs"
        if self.differ is None:
            return "outputs differ" + (f" ({self.note})" if self.note else "")
        text = f"{self.differ}/{self.elements} elements differ"
        details = []
        if self.max_abs_error is not None:
            details.append(f"max abs {self.max_abs_error:.3g}")
        if self.nan_mismatches:
            details.append(f"{self.nan_mismatches} NaN on one side only")
        return text + (f" ({', '.join(details)})" if details else "")


@dataclass
class OutputsDiff:
    """The recorded outputs of a module pair (XLA's snapshots, or xlatools' recordings), execution by execution."""

    source: str  # "snapshots", "recorded"
    executions: list[ExecutionDelta] = field(default_factory=list)
    count_a: int = 0  # executions recorded on each side
    count_b: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return any(not e.same_outputs for e in self.executions)

    @property
    def differs_with_same_arguments(self) -> bool:
        """An execution whose arguments agree and whose outputs do not: the module itself computes otherwise."""
        return any(not e.same_outputs and e.same_arguments for e in self.executions)

    def short(self) -> str:
        first = next((e for e in self.executions if not e.same_outputs), None)
        if first is None:
            return "same" if self.executions else "-"
        return f"{first.differ}/{first.elements} differ" if first.differ is not None else "differ"

    def summary(self) -> str:
        if not self.executions:
            return "-"
        first = next((e for e in self.executions if not e.same_outputs), None)
        if first is None:
            return f"same ({len(self.executions)} executions)"
        args = "same arguments" if first.same_arguments else "other arguments" if first.same_arguments is False else ""
        return f"execution {first.number}: {first.summary()}" + (f", {args}" if args else "")


@dataclass
class MetricDelta:
    """One metric of a module (or of the program's processes) on both sides, and B / A."""

    metric: str  # compile_s, run_s, temp_bytes, argument_bytes, output_bytes, peak_rss_mb
    a: float | None
    b: float | None
    ratio: float | None  # b / a; None when a side did not measure it or either is 0
    spread_a: str | None = None  # run_s: how many calls the median is of, and their minimum
    spread_b: str | None = None
    ranked: bool = True  # counts in the module's `change` (False: below its floor, or too few calls to tell)


@dataclass
class ModuleMetricsDelta:
    name: str
    a: str  # `#6 (0010)`: the observer's compile number and the dump's module id
    b: str
    metrics: list[MetricDelta] = field(default_factory=list)
    change: float = 1.0  # the largest factor (ratio or its inverse) of a metric past its floor; sorts the table

    def get(self, metric: str) -> MetricDelta | None:
        return next((m for m in self.metrics if m.metric == metric), None)


@dataclass
class BufferRow:
    """One buffer (an HLO value) of a module's buffer assignment, with the instruction that defines it."""

    size: int
    allocation: int
    kind: str  # temp, parameter, output, thread-local, constant
    value: str  # the defining instruction (and tuple index when not {})
    shape: str
    opcode: str | None = None
    op_name: str | None = None  # jax's op name in the metadata: `jit(power_sum)/real`
    source: str | None = None  # file:line of the user's code, from the metadata


@dataclass
class GrownModule:
    """A module whose memory grew from A to B, and its largest buffers on each side."""

    name: str
    metric: str
    a: float
    b: float
    ratio: float | None
    buffers_a: list[BufferRow] = field(default_factory=list)
    buffers_b: list[BufferRow] = field(default_factory=list)
    note: str | None = None  # why the buffers are not shown


@dataclass
class MetricsDiff:
    """Per-module metrics of two runs (records.metrics), largest change first."""

    modules: list[ModuleMetricsDelta] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    processes: list[MetricDelta] = field(default_factory=list)  # peak RSS and CPU time of the whole program
    grown: list[GrownModule] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
