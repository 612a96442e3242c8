"""The record of a replay bundle (`xlatools replay`, `repro pack|run`) and of a repro pack's index.

Field names and shapes are those xlatools has written since schema 1, so old bundles and packs
read unchanged (tests/fixtures/bundles-v1/replay-seed, pack-seed.tar.gz). The parts a target
process reports (outputs, comparisons, timings, what it loaded, its versions and device) are
the shapes the target script `replay/probes/replay_module.py` writes into its result.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from xlatools.records.base import OMIT_NONE, BundleRecord
from xlatools.records.run import Device, EnvChangeRecord, JaxInfo, PresetRef, ProgramRecord
from xlatools.vocab import IsolationOutcome, Platform, ReplayOutcome, SourceForm

REPLAY_SCHEMA = "xlatools.replay/1"
PACK_FORMAT = "xlatools.repro/1"
PACKED_INPUTS = "inputs.npz"  # an --inputs FILE, inside a pack (reduce's minimal modules need their exact inputs)
DEFAULT_TOLERANCE = 1e-3  # run_hlo_module's --abs_error_bound / --rel_error_bound


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
    env: dict[str, str] = field(default_factory=dict)  # numerics variables restored in every target (replay/settings.py)


@dataclass(kw_only=True)
class PlannedModule:
    name: str
    id: int | None = None
    files: dict[str, str] = field(default_factory=dict)  # form (text, proto, snapshot, mlir) -> path


@dataclass(kw_only=True)
class PlannedRun:
    """One target process per module: the test, or a reference it is compared with."""

    label: str  # test, reference-cpu, reference-python-N
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
class TargetVersions:
    """An interpreter the replay used, as its probe saw it."""

    python_version: str | None = None
    jax: str | None = None
    jaxlib: str | None = None
    backend: str | None = None
    devices: list[Device] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class OutputDigest:
    shape: list[int]
    dtype: str
    sha256: str  # of dtype, shape and the bytes


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
class LoadedFrom:
    kind: str  # text, proto or mlir
    path: str
    how: str  # how the target read it (e.g. "text; stack-frame tables dropped")


@dataclass(kw_only=True)
class TargetSeen:
    """The versions a target process reported."""

    jax: str | None = None
    jaxlib: str | None = None
    python: str | None = None


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
    versions: TargetSeen | None = None
    device: Device | None = None
    duration_s: float | None = None
    dir: str | None = None


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
    # Did the test compile the module the run compiled (its dumped after_optimizations)? None: nothing to compare.
    compiled_as_run: bool | None = field(default=None, metadata=OMIT_NONE)
    # The test run's fingerprint and outputs and every run's comparisons, repeated for readers.
    fingerprint: str | None = None
    outputs: list[OutputDigest] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)

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


@dataclass(kw_only=True)
class Isolation(IsolationSummary):
    rows: list[IsolatedInstruction] = field(default_factory=list)


@dataclass(kw_only=True)
class ReplayManifest(BundleRecord):
    kind: Literal["replay"] = "replay"
    manifest_schema: str = REPLAY_SCHEMA
    source: str | None = None
    plan: PlanRecord | None = None
    targets: dict[str, TargetVersions] = field(default_factory=dict)  # by interpreter path
    flag_checks: dict[str, dict[str, str]] = field(default_factory=dict)  # run label -> flag -> how it was decided
    modules: list[ModuleRecord] = field(default_factory=list)
    isolation: IsolationSummary | None = field(default=None, metadata=OMIT_NONE)  # replay --isolate


# A repro pack's index (pack.json): what to replay, how, and the outcome it must give.

@dataclass(kw_only=True)
class PackedOptions:
    """The replay options a pack carries (an interpreter's path would not travel: only --reference cpu).
    Each is a field of ReplayRequest of the same name and type: a pack's options become its request."""

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


@dataclass(kw_only=True)
class PackVersions:
    """The interpreter that recorded the expected outcome."""

    python: str | None = None
    jax: str | None = None
    jaxlib: str | None = None
    plugins: list[str] = field(default_factory=list)
    backend: str | None = None
    devices: list[Device] = field(default_factory=list)


@dataclass(kw_only=True)
class PackRun:
    """What the pack keeps of the run bundle it was made from."""

    program: ProgramRecord | None = None
    jax: JaxInfo | None = None
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
    versions: PackVersions | None = None
    run: PackRun | None = None
    modules: list[PackModule] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    reference_pythons: list[PackReference] = field(default_factory=list)
