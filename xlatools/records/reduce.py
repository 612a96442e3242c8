"""The records of `xlatools reduce`: what was asked, the plan, the oracle's verdicts, the rounds, the
reduce bundle's manifest (kind "reduce") and the resumable state file of a reduction."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from xlatools.records.base import OMIT_NONE, BundleRecord
from xlatools.records.replay import DEFAULT_TOLERANCE, Comparison, InputSource, PlannedModule, PlannedRun
from xlatools.records.run import Device, InterpreterFacts
from xlatools.vocab import Interest, OracleKind, Platform, PrecisionMode, ReduceStrategy, ReplayOutcome

REDUCE_SCHEMA = "xlatools.reduce/1"
STATE_SCHEMA = "xlatools.reduce-state/1"
DEFAULT_RECHECKS = 3


@dataclass(kw_only=True)
class ReduceRequest:
    """What was asked of a reduction (the command's options)."""

    source: Path
    python: str
    module: str | None = None
    references: list[str] = field(default_factory=list)
    reference_pythons: list[str] = field(default_factory=list)
    error: str | None = None
    script: str | None = None
    inputs: str | None = None
    seed: int = 0
    atol: float = DEFAULT_TOLERANCE
    rtol: float = DEFAULT_TOLERANCE
    xla_flags: list[str] = field(default_factory=list)
    disable_passes: list[str] = field(default_factory=list)
    platform: Platform = Platform.AUTO
    jobs: int = 1
    timeout: float | None = None
    max_time: float | None = None
    rechecks: int = DEFAULT_RECHECKS
    strategy: ReduceStrategy = ReduceStrategy.FULL
    culprit_pass: str | None = None  # named by `bisect passes`, for ISSUE.md
    name: str | None = None
    crash: CrashSignature | None = field(default=None, metadata=OMIT_NONE)  # the crash oracle (triage gives it)
    # The mismatch oracle: auto = a difference only below full precision is not interesting (replay/precision.py).
    precision: PrecisionMode | None = field(default=None, metadata=OMIT_NONE)  # None: auto


@dataclass(kw_only=True)
class CrashSignature:
    """How the original module died (the crash oracle keeps candidates that die the same way)."""

    failure: ReplayOutcome = ReplayOutcome.CRASH  # crash (a signal), or compile-error / runtime-error
    signal: str | None = None
    phase: str | None = None  # compile | run
    message: str | None = None  # a compiler error's telling line (the oracle looks for it)
    frames: list[str] = field(default_factory=list)  # the original's top native frames, compared at the end

    def describe(self) -> str:
        doing = {"compile": "while compiling", "run": "while running"}.get(self.phase or "", "")
        what = self.signal or (f"{self.failure} ({self.message})" if self.message else str(self.failure))
        return f"the test dies by {what} {doing}".rstrip() + " (as the original module does)"


@dataclass(kw_only=True)
class OracleSpec:
    kind: OracleKind
    error_regex: str | None = None
    script: str | None = None
    atol: float = DEFAULT_TOLERANCE
    rtol: float = DEFAULT_TOLERANCE
    crash: CrashSignature | None = field(default=None, metadata=OMIT_NONE)  # the crash oracle's

    def describe(self) -> str:
        if self.kind == OracleKind.MISMATCH:
            return f"the test's outputs differ from the reference's (atol {self.atol:g}, rtol {self.rtol:g})"
        if self.kind == OracleKind.RECORDED:
            return f"the test's outputs differ from the snapshot's recorded result (atol {self.atol:g}, rtol {self.rtol:g})"
        if self.kind == OracleKind.ERROR:
            return f"the test fails with a message matching /{self.error_regex}/"
        if self.kind == OracleKind.CRASH and self.crash is not None:
            return self.crash.describe()
        return f"the script exits 1-127 (125: skip): {self.script}"


@dataclass(kw_only=True)
class ReducePlanRecord:
    """The plan as the manifest and `--dry-run --json` show it."""

    request: ReduceRequest
    module: PlannedModule
    oracle: OracleSpec
    describe: str  # the oracle in words
    test: PlannedRun
    reference: PlannedRun | None = None
    name: str
    input_source: InputSource | None = field(default=None, metadata=OMIT_NONE)  # of every candidate's runs


@dataclass(kw_only=True)
class FailureSeen:
    """How the test run of a candidate failed (error oracle, or a failure that made it uninteresting)."""

    failure: ReplayOutcome
    phase: str | None = None
    signal: str | None = None
    message: str = ""


@dataclass(kw_only=True)
class Verdict:
    """The oracle on one candidate; only `interesting` candidates are kept."""

    interest: Interest
    reason: str
    comparison: Comparison | None = None  # mismatch / recorded oracles: the figures
    failure: FailureSeen | None = None
    script_exit: int | None = None  # script oracle
    dir: str | None = None  # the candidate's work folder (kept for interesting ones)

    @property
    def interesting(self) -> bool | None:
        """True, False, or None for skip (cannot tell)."""
        return {Interest.INTERESTING: True, Interest.NOT_INTERESTING: False}.get(self.interest)


@dataclass(kw_only=True)
class Round:
    number: int
    phase: str  # a strategy phase (reduce/strategies.py)
    instructions_before: int
    instructions_after: int = 0
    candidates: int = 0
    oracle_calls: int = 0
    seconds: float = 0.0


@dataclass(kw_only=True)
class Counters:
    candidates: int = 0  # candidates asked about
    oracle_calls: int = 0  # candidates that ran the oracle
    cache_hits: int = 0
    unparsable: int = 0  # refused by the target's HLO parser


@dataclass(kw_only=True)
class RanWith:
    """The interpreter a final re-check ran in, as the target reported it."""

    versions: InterpreterFacts | None = None
    device: Device | None = None


@dataclass(kw_only=True)
class ReduceEnd:
    """Why a reduction ended where it did, and what would take it further (reduce/ending.py)."""

    reason: str  # the budget ran out, or a whole round of the strategies found nothing smaller
    strategies: list[str] = field(default_factory=list)  # each strategy of the last round: what it tried
    not_judged: list[str] = field(default_factory=list)  # what the oracle (or the target) could not judge
    further: list[str] = field(default_factory=list)  # what would take it further


@dataclass(kw_only=True)
class ReduceResult:
    """The counts and paths a reduction ends with (the manifest's `result`, summary.json and --json)."""

    instructions_before: int
    instructions_after: int
    oracle: OracleKind
    oracle_calls: int = 0
    candidates: int = 0
    cache_hits: int = 0
    unparsable: int = 0
    seconds: float = 0.0
    stopped: str | None = None  # "max-time" when the budget ran out
    ended: ReduceEnd | None = field(default=None, metadata=OMIT_NONE)  # why it stopped there
    flaky: bool = False
    rechecks: list[Verdict] = field(default_factory=list)
    verdict: str = ""  # the last re-check's reason
    state: str | None = None  # the state folder (resume)
    files: dict[str, str] = field(default_factory=dict)  # reduced.hlo.txt, inputs.npz, ISSUE.md, ... -> path
    # crash oracle: whether the reduced module dies in the same top frames as the original (None: not known)
    same_frames: bool | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class ReduceManifest(BundleRecord):
    kind: Literal["reduce"] = "reduce"
    manifest_schema: str = REDUCE_SCHEMA
    source: str | None = None
    plan: ReducePlanRecord | None = None
    targets: dict[str, InterpreterFacts] = field(default_factory=dict)  # by interpreter path
    rounds: list[Round] = field(default_factory=list)
    test: RanWith | None = None
    reference: RanWith | None = None
    result: ReduceResult | None = None
    # the reduced module's crash: every thread's frames
    native_backtrace: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class RecordedValue:
    """Where an instruction's recorded value lives: array `index` of the .npz at `path`."""

    path: str
    index: int


@dataclass(kw_only=True)
class SavedCandidate:
    text: str  # the module's HLO text
    inputs: dict[str, str] = field(default_factory=dict)  # entry parameter -> arg:K or value:NAME
    outputs: list[int | None] = field(default_factory=list)
    verdict: Verdict
    note: str = ""


@dataclass(kw_only=True)
class ReduceState:
    """`<out>/.reduce-state/<name>-<key>/state.json`: the best candidate so far and every verdict,
    written after every improvement and round; the same command continues from it."""

    schema: str = STATE_SCHEMA
    key: str
    best: SavedCandidate | None = None
    cache: dict[str, Verdict] = field(default_factory=dict)  # candidate fingerprint -> verdict
    values: dict[str, RecordedValue] = field(default_factory=dict)  # instruction -> its recorded value
    splats: dict[str, str | None] = field(default_factory=dict)  # instruction -> literal when all elements are equal
    counters: Counters = field(default_factory=Counters)
    rounds: list[Round] = field(default_factory=list)
    saved: str | None = None
