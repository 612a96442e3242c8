"""The record of a replay bundle (`xlatools replay`, `repro pack|run`) and of a repro pack's index: the shapes
written since schema 1 (old bundles and packs read unchanged); a target's parts are what replay_module.py writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from xlatools.records.base import OMIT_NONE, BundleRecord
from xlatools.records.run import EnvChangeRecord, InterpreterFacts, PresetRef, ProgramRecord

# Re-exported (the F401s): readers import a replay's records from here.
from xlatools.records.replay_runs import (
    DEFAULT_TOLERANCE,
    Comparison,
    LoadedFrom,  # noqa: F401
    OutputCheck,  # noqa: F401
    OutputDigest,
    PrecisionCheck,
    RaisedInstruction,  # noqa: F401
    RunRecord,
    RunSpeed,  # noqa: F401
    SpeedComparison,
    Timings,  # noqa: F401
)
from xlatools.vocab import IsolationOutcome, Platform, PrecisionMode, ReplayOutcome, SourceForm

REPLAY_SCHEMA = "xlatools.replay/1"
PACK_FORMAT = "xlatools.repro/1"
PACKED_INPUTS = "inputs.npz"  # an --inputs FILE, inside a pack (reduce's minimal modules need their exact inputs)


@dataclass
class InputSource:
    """Where a module's arguments came from: snapshot, recorded (by xlatools in the run), file, random, zeros, ones."""

    kind: str
    seed: int | None = None
    path: str | None = None


class Labelled:
    """A module as messages name it: `0003 jit_f` (id and name), or the name alone."""

    name: str
    id: int | None

    @property
    def label(self) -> str:
        return self.name if self.id is None else f"{self.id:04d} {self.name}"


@dataclass(kw_only=True)
class ReplayRequest:
    """What was asked of a replay (the command's options, or a pack's)."""

    source: Path
    python: str
    modules: list[str] = field(default_factory=list)
    include_all: bool = False
    process: int | None = None  # of a multi-process run's bundle: whose dump (None: process 0)
    # --snapshot: whose execution's snapshot (0 the first, -1 the last); None: the first
    snapshot: int | None = field(default=None, metadata=OMIT_NONE)
    source_from: SourceForm = SourceForm.AUTO
    inputs: str | None = None  # random, zeros, ones or an .npz; None: the snapshot's arguments, else random
    seed: int = 0
    references: list[str] = field(default_factory=list)
    reference_pythons: list[str] = field(default_factory=list)
    reference_xla_flags: list[str] = field(default_factory=list)
    atol: float = DEFAULT_TOLERANCE
    rtol: float = DEFAULT_TOLERANCE
    iterations: int = 1
    xla_flags: list[str] = field(default_factory=list)
    disable_passes: list[str] = field(default_factory=list)
    no_opt: bool = False
    platform: Platform = Platform.AUTO
    dump: list[str] = field(default_factory=list)
    print_literals: bool = False
    timeout: float | None = None
    name: str | None = None
    # numerics variables restored in every target (replay/settings.py)
    env: dict[str, str] = field(default_factory=dict)
    # GPU compiles in run/determinism.py's mode unless False
    deterministic: bool | None = field(default=None, metadata=OMIT_NONE)
    # False (repro pack): replay as the pack's own `repro run` will, without the run's debug options or form search
    as_run: bool | None = field(default=None, metadata=OMIT_NONE)
    # Dots/convolutions below full precision (replay/precision.py); None: auto (bundles older than it: as compiled).
    precision: PrecisionMode | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class PlannedModule:
    name: str
    id: int | None = None
    files: dict[str, str] = field(default_factory=dict)  # form (text, proto, snapshot, mlir) -> path


@dataclass(kw_only=True)
class PlannedRun:
    """One target process per module: the test, or a reference it is compared with."""

    label: str  # test, reference-cpu, reference-jax-<its version> (reference-python-N before it was probed)
    role: Literal["test", "reference"]
    python: str
    platform: Platform
    xla_flags: list[str] = field(default_factory=list)
    flag_sources: dict[str, str] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)  # the request's numerics variables, over the caller's


@dataclass(kw_only=True)
class PlanRecord:
    request: ReplayRequest
    source_kind: str  # file, dump, bundle or pack
    name: str
    notes: list[str] = field(default_factory=list)
    modules: list[PlannedModule] = field(default_factory=list)
    runs: list[PlannedRun] = field(default_factory=list)


@dataclass(kw_only=True)
class ModuleRecord(Labelled):
    """One module replayed: every run, and the outcome they add up to."""

    name: str
    id: int | None = None
    files: dict[str, str] = field(default_factory=dict)  # form -> path
    outcome: ReplayOutcome = ReplayOutcome.OK
    failed_run: str | None = None  # the label of the run the outcome comes from
    runs: list[RunRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    input_source: InputSource | None = field(default=None, metadata=OMIT_NONE)  # of the test run (references take its)
    # Did the test compile the module the run compiled (its dumped after_optimizations)? None: nothing to compare.
    compiled_as_run: bool | None = field(default=None, metadata=OMIT_NONE)
    # The test run's fingerprint and outputs and every run's comparisons, repeated for readers.
    fingerprint: str | None = None
    outputs: list[OutputDigest] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    precision: PrecisionCheck | None = field(default=None, metadata=OMIT_NONE)  # dots/convolutions below full precision
    # Its execution time on the test's interpreter and each --reference-python's, the slower named (replay/speed.py).
    speed: SpeedComparison | None = field(default=None, metadata=OMIT_NONE)

    @property
    def test(self) -> RunRecord | None:
        return self.runs[0] if self.runs else None


@dataclass(kw_only=True)
class IsolatedInstruction:
    """`replay --isolate`: one entry instruction (post order) run as its own module against the reference."""

    index: int
    name: str
    opcode: str
    shape: str
    operands: list[str] = field(default_factory=list)
    outcome: IsolationOutcome
    detail: str = ""


@dataclass(kw_only=True)
class IsolationSummary:
    """What `replay --isolate` found, as the replay manifest and --json carry it (every row: `file`)."""

    file: str  # isolate.json in the replay bundle (an Isolation record)
    module: str
    oracle_calls: int = 0
    first_mismatch: IsolatedInstruction | None = None
    # When no instruction mismatches alone: the first whose value, computed from the module's inputs, does.
    first_mismatch_in_context: IsolatedInstruction | None = None
    form: str | None = field(default=None, metadata=OMIT_NONE)  # what the module was read from: `HLO text (FILE)`


@dataclass(kw_only=True)
class Isolation(IsolationSummary):
    rows: list[IsolatedInstruction] = field(default_factory=list)


@dataclass(kw_only=True)
class ReplayManifest(BundleRecord):
    kind: Literal["replay"] = "replay"
    manifest_schema: str = REPLAY_SCHEMA
    source: str | None = None
    plan: PlanRecord | None = None
    targets: dict[str, InterpreterFacts] = field(default_factory=dict)  # by interpreter path
    flag_checks: dict[str, dict[str, str]] = field(default_factory=dict)  # run label -> flag -> how it was decided
    modules: list[ModuleRecord] = field(default_factory=list)
    isolation: IsolationSummary | None = field(default=None, metadata=OMIT_NONE)  # replay --isolate


@dataclass(kw_only=True)
class PackedOptions:
    """A pack's index (pack.json) holds what to replay, how, and the outcome it must give; these are its replay
    options (an interpreter's path would not travel: only --reference cpu). Each is a field of ReplayRequest
    of the same name and type: a pack's options become its request."""

    source_from: SourceForm = SourceForm.AUTO
    inputs: str | None = None  # random, zeros, ones, or PACKED_INPUTS: an --inputs .npz that travels in the pack
    seed: int = 0
    atol: float = DEFAULT_TOLERANCE
    rtol: float = DEFAULT_TOLERANCE
    xla_flags: list[str] = field(default_factory=list)
    disable_passes: list[str] = field(default_factory=list)
    no_opt: bool = False
    platform: Platform = Platform.AUTO
    references: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # numerics variables of the run (JAX_ENABLE_X64, ...)
    deterministic: bool | None = field(default=None, metadata=OMIT_NONE)  # False: made with --nondeterministic
    # None: a pack older than --precision, which recorded its outcome with one comparison as compiled.
    precision: PrecisionMode | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class PackRun:
    """What the pack keeps of the run bundle it was made from."""

    program: ProgramRecord | None = None
    jax: InterpreterFacts | None = None
    xla_flags: list[str] = field(default_factory=list)
    env_changes: list[EnvChangeRecord] = field(default_factory=list)
    platform: Platform | None = None
    presets: list[PresetRef] = field(default_factory=list)


@dataclass(kw_only=True)
class PackModule(Labelled):
    """A module's expected outcome (in a pack), or the outcome a replay of it gave."""

    name: str
    id: int | None = None
    outcome: ReplayOutcome
    failed_run: str | None = None
    phase: str | None = None
    signal: str | None = None
    fingerprint: str | None = None
    outputs: list[str] = field(default_factory=list)  # output digests (sha256)
    files: dict[str, str] = field(default_factory=dict)  # form -> path inside the pack
    # What the outcome was judged against (replay/outcome.judged_against): the comparisons that failed for a
    # mismatch (`reference-python-1`, `snapshot`), all that judged for ok, the failed run for a failure.
    # None: a pack older than it (its `failed_run` says as much as it knew).
    against: list[str] | None = field(default=None, metadata=OMIT_NONE)
    input_source: InputSource | None = field(default=None, metadata=OMIT_NONE)  # the inputs it was judged on


@dataclass(kw_only=True)
class LeftOut(Labelled):
    """A module a pack leaves out: xlatools could not replay it (a tool failure is never an expected outcome)."""

    name: str
    id: int | None = None
    why: str


@dataclass(kw_only=True)
class PackReference:
    """An interpreter the pack's replay compared with (--reference-python): `repro run` needs one of that jaxlib."""

    python: str
    jaxlib: str | None = None


@dataclass(kw_only=True)
class PackIndex:
    format: str = PACK_FORMAT
    xlatools_version: str | None = None
    source: str = ""  # the name of the bundle or file it was made from
    replay: PackedOptions = field(default_factory=PackedOptions)
    versions: InterpreterFacts | None = None
    run: PackRun | None = None
    modules: list[PackModule] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    reference_pythons: list[PackReference] = field(default_factory=list)
    # Of a pack made by `reduce`: what made its module interesting there, and that oracle's verdict (a check
    # script, or a reference interpreter, does not travel: the recorded outcome is then the test's alone).
    oracle: str | None = field(default=None, metadata=OMIT_NONE)
