"""What one target process of a replay reports (the shapes `replay/probes/replay_module.py` writes into its
result.json: outputs, comparisons, timings, what it loaded, its versions) and what full precision showed
(replay/precision.py). Re-exported by xlatools.records.replay, where readers find them."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlatools.records.base import OMIT_NONE
from xlatools.records.run import Device, InterpreterFacts
from xlatools.vocab import PrecisionMode, ReplayOutcome

DEFAULT_TOLERANCE = 1e-3  # run_hlo_module's --abs_error_bound / --rel_error_bound


@dataclass(kw_only=True)
class OutputDigest:
    shape: list[int]
    dtype: str
    sha256: str  # of dtype, shape and the bytes
    nan: int | None = field(default=None, metadata=OMIT_NONE)  # how many elements are NaN (None: not counted)
    inf: int | None = field(default=None, metadata=OMIT_NONE)  # how many are +-Inf


@dataclass(kw_only=True)
class OutputCheck:
    """One output against its expected value."""

    shape: list[int]
    expected_shape: list[int]
    dtype: str
    expected_dtype: str
    mismatches: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    nan_mismatches: int = 0
    message: str | None = None  # "shape differs"


@dataclass(kw_only=True)
class Comparison:
    """A run's outputs against one expected set: the snapshot's result, or the test's outputs (a reference)."""

    against: str  # snapshot, or the reference run's label
    ok: bool
    outputs: list[OutputCheck] = field(default_factory=list)
    mismatches: int = 0
    elements: int = 0
    nan_mismatches: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    message: str | None = None  # when the outputs could not be compared at all (their number differs)


@dataclass(kw_only=True)
class Timings:
    """Seconds per execution of the compiled module."""

    count: int
    min: float
    median: float
    first: float


@dataclass(kw_only=True)
class RunSpeed:
    """One run's execution time in a speed comparison: which interpreter, how fast (seconds per execution)."""

    label: str  # test, reference-python-N
    python: str
    jaxlib: str | None = None
    min_s: float
    median_s: float
    count: int  # executions timed (--iterations)


@dataclass(kw_only=True)
class SpeedComparison:
    """A module's execution time on the test's interpreter and on each --reference-python, and the slower one:
    compared by the fastest execution of each (the steadiest figure on a loaded machine)."""

    runs: list[RunSpeed] = field(default_factory=list)
    slowest: str  # the label of the slowest run
    fastest: str
    ratio: float  # slowest min_s / fastest min_s
    slower: str | None = None  # `slowest`, when the ratio is past the noise margin; None: about the same
    margin: float = 1.1  # ratios up to this are "about the same"
    note: str | None = field(default=None, metadata=OMIT_NONE)  # e.g. one execution each


@dataclass(kw_only=True)
class LoadedFrom:
    kind: str  # text, proto or mlir
    path: str
    how: str  # how the target read it (e.g. "text; stack-frame tables dropped")


@dataclass(kw_only=True)
class RunRecord:
    """One target process: the module compiled and run once (the test or a reference)."""

    label: str
    python: str
    failure: ReplayOutcome | None = None  # None: it ran to the end
    phase: str | None = None  # start, load, inputs, compile, run, compare: where it was (or stopped)
    message: str | None = None
    returncode: int | None = None
    signal: str | None = None
    native_backtrace: str | None = field(default=None, metadata=OMIT_NONE)  # of a crash: every thread's native frames
    log_tail: list[str] = field(default_factory=list)  # the end of its stderr, when it failed
    fingerprint: str | None = None  # of the optimised HLO, canonical
    outputs: list[OutputDigest] = field(default_factory=list)
    compile_s: float | None = None
    run_s: Timings | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    loaded_from: LoadedFrom | None = None
    # the run's non-default debug options, applied (None: none were given)
    compile_options: dict[str, str] | None = field(default=None, metadata=OMIT_NONE)
    options_dropped: str | None = field(default=None, metadata=OMIT_NONE)  # why they were not (an older jaxlib)
    versions: InterpreterFacts | None = None
    device: Device | None = None
    duration_s: float | None = None
    dir: str | None = None


@dataclass(kw_only=True)
class RaisedInstruction:
    """A dot or convolution below full precision, raised to it (replay/precision.py)."""

    name: str
    opcode: str  # dot or convolution
    computation: str
    was: str  # what made it reduced: "operand precision DEFAULT (not printed)", "operand_precision={high,high}", "algorithm=..."


@dataclass(kw_only=True)
class PrecisionCheck:
    """How a module's dots and convolutions below full precision were treated, and what that showed.
    `verdict` (auto): `precision` when the test matches every reference at full precision, `mismatch` when
    it still differs; None when nothing was classified (as-compiled, highest, or no second run)."""

    mode: PrecisionMode
    rule: str
    raised: list[RaisedInstruction] = field(default_factory=list)
    verdict: ReplayOutcome | None = None
    atol: float = DEFAULT_TOLERANCE
    rtol: float = DEFAULT_TOLERANCE
    as_compiled: list[Comparison] = field(default_factory=list)  # the test against each reference, as compiled
    highest: list[Comparison] = field(default_factory=list)  # the same at full precision
    module: str | None = None  # the rewritten module text
    run: RunRecord | None = field(default=None, metadata=OMIT_NONE)  # auto: the test run again at full precision
    note: str | None = None  # what it means, in one line (also in the module's notes)
