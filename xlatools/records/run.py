"""The record of a run bundle (`xlatools run`, bisect steps) and the parts it is made of.

Field names and shapes are those of the manifests xlatools has written since schema 1, so
old bundles read unchanged (tests/fixtures/bundles-v1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from xlatools.records.base import KEYWORD_KEYS, OMIT_NONE, BundleRecord
from xlatools.records.cluster import SlurmJobRecord
from xlatools.records.metrics import RunMetrics
from xlatools.records.hang import ChildCrash, StuckCapture
from xlatools.vocab import Platform, ProcessStatus

RUN_SCHEMA = "xlatools.run/1"
RUN_KINDS = ("run", "debug")  # bundles whose manifest is a run's: runs, and debug sessions (a run under gdb)


@dataclass(kw_only=True)
class ProgramRecord:
    kind: Literal["smoke", "script", "module"]
    name: str
    args: list[str] = field(default_factory=list)
    label: str = ""


@dataclass(kw_only=True)
class Interpreter:
    """Which interpreter ran the program (the facts it reported are the manifest's `jax`)."""

    python: str | None = None
    python_version: str | None = None


@dataclass(kw_only=True)
class Device:
    id: int | None = None
    platform: str | None = None
    kind: str | None = None


# Packs and replay runs written before the one record below named the Python version `python`.
_OLD_VERSION_KEY = {
    "alias_generator": lambda name: "python" if name == "python_version" else name,
    "populate_by_name": True,
}


@dataclass(kw_only=True)
class InterpreterFacts:
    """What an interpreter reported about itself: a run manifest's `jax`, a replay's or reduction's `targets`,
    a replayed module's `versions`, a pack's `versions`. One record, so every reader asks the same fields."""

    __pydantic_config__ = _OLD_VERSION_KEY  # readers accept `python` (old packs, old replays) as `python_version`

    python_version: str | None = field(default=None, metadata=OMIT_NONE)  # a run manifest has it in `interpreter`
    jax: str | None = None
    jaxlib: str | None = None
    backend: str | None = None
    devices: list[Device] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class FrontendInfo:
    name: str = "jax"
    version: str | None = None
    xla_source: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    tf_xla_flags: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class PresetRef:
    name: str
    kind: str
    source: str | None = None


@dataclass(kw_only=True)
class EnvChangeRecord:
    name: str
    value: str | None  # None: removed from the program's environment
    previous: str | None = None
    source: str = ""


@dataclass(kw_only=True)
class OverrideRecord:
    """A flag that a higher (or later) setting replaced."""

    __pydantic_config__ = KEYWORD_KEYS
    flag: str
    by: str
    from_: str  # where the replaced flag came from
    source: str  # where the flag that replaced it came from


@dataclass(kw_only=True)
class ProvenanceRow:
    key: str
    value: Any  # a profile value: any YAML scalar, list or mapping
    origin: str


@dataclass(kw_only=True)
class ProfileRun:
    """The parts of a resolved profile that a run uses (plain data, so plans stay pure)."""

    name: str | None = None
    file: str | None = None
    chain: list[str] = field(default_factory=list)
    presets: list[str] = field(default_factory=list)
    dump_preset: str = "hlo"
    env: dict[str, str] = field(default_factory=dict)
    xla_flags: list[str] = field(default_factory=list)
    platform: Platform = Platform.AUTO
    python: str | None = None
    timeout: float | None = None
    frontend: str | None = None
    resolved: dict[str, Any] = field(default_factory=dict)  # the whole profile after extends: the profile model's JSON
    provenance: list[ProvenanceRow] = field(default_factory=list)  # file:line of every value set


@dataclass(kw_only=True)
class SourceRef:
    """The user's line that created a module."""

    file: str
    line: int
    function: str | None = None  # None on jaxlib 0.4.30 (no function names in the dump)
    via: SourceRef | None = field(default=None, metadata=OMIT_NONE)  # the library frame that line called into


@dataclass(kw_only=True)
class DumpModuleSummary:
    id: int
    name: str
    bytes: int = 0
    stages: list[str] = field(default_factory=list)
    before_file: str | None = None
    after_file: str | None = None
    platform: str | None = None
    snapshots: int = 0
    instructions_before: int | None = None
    instructions_after: int | None = None
    source: SourceRef | None = None
    short_name: str = ""
    origin: str | None = None
    pass_steps: int = 0
    file_count: int = 0
    # The module's StableHLO (what jax handed XLA; replay's first form), relative to the dump: module_NNNN.<name>/
    # module.mlir, or ../jax_ir/jax_ir<N>_<name>_compile.mlir (run/jax_ir.py)
    stablehlo: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class DumpSummary:
    dir: str = "xla_dump"
    layout: str = ""
    files: int = 0
    bytes: int = 0
    modules: list[DumpModuleSummary] = field(default_factory=list)


@dataclass(kw_only=True)
class SmokeResult:
    name: str
    ok: bool
    backend: str | None = None
    devices: int | None = None
    max_abs_error: float | None = None
    message: str = ""
    seconds: float | None = None


@dataclass(kw_only=True)
class SmokeReport:
    jax: str | None = None
    results: list[SmokeResult] = field(default_factory=list)


@dataclass(kw_only=True)
class ProcessRecord:
    """One process of a multi-process run (`run --processes N`)."""

    id: int
    status: ProcessStatus
    devices: int | None = None  # its own devices (--devices-per-process)
    returncode: int | None = None  # its own exit status (negative: killed by that signal)
    signal: str | None = None
    outcome: str | None = None  # `exit 3`, `killed by SIGSEGV`
    first_failure: bool = False  # the process whose failure stopped the others
    duration_s: float | None = None
    stdout: str = ""  # its logs, relative to the bundle
    stderr: str = ""
    env: dict[str, str] = field(default_factory=dict)  # what it got on top of the run's env_changes
    dump: DumpSummary | None = None  # its own dump (xla_dump/pI)
    smoke: SmokeReport | None = None
    gpus: list[Device] = field(default_factory=list)  # the GPUs it was given (JAX_LOCAL_DEVICE_IDS): index, name
    last_lines: list[str] = field(default_factory=list)  # a failed process's last stderr lines


@dataclass(kw_only=True)
class RunManifest(BundleRecord):
    kind: Literal["run"] = "run"
    manifest_schema: str = RUN_SCHEMA
    program: ProgramRecord | None = None
    program_argv: list[str] = field(default_factory=list)
    cwd: str | None = None
    interpreter: Interpreter = field(default_factory=Interpreter)
    jax: InterpreterFacts = field(default_factory=InterpreterFacts)
    frontend: FrontendInfo = field(default_factory=FrontendInfo)
    platform: Platform = Platform.AUTO
    profile: ProfileRun | None = None
    presets: list[PresetRef] = field(default_factory=list)
    xla_flags: list[str] = field(default_factory=list)
    xla_flag_sources: dict[str, str] = field(default_factory=dict)
    overridden_flags: list[OverrideRecord] = field(default_factory=list)
    env_changes: list[EnvChangeRecord] = field(default_factory=list)
    # The variables that change numbers (run.manifest.NUMERICS_ENV) the program ran with; None: a run
    # recorded before xlatools kept them (its env_changes are what it knows).
    numerics_env: dict[str, str] | None = field(default=None, metadata=OMIT_NONE)
    timeout: float | None = None
    notes: list[str] = field(default_factory=list)
    # asked for and did not happen (run/dump_expect.py)
    warnings: list[str] | None = field(default=None, metadata=OMIT_NONE)
    flag_checks: dict[str, str] = field(default_factory=dict)  # flag name -> how it was decided (table, probe, cache)
    returncode: int | None = None  # the program's own status (negative: killed by that signal)
    signal: str | None = None
    program_outcome: str | None = None  # `exit 3`, `killed by SIGSEGV`
    # native-backtrace.txt (every thread's native frames, the Python traceback) when the program died by a fatal signal
    native_backtrace: str | None = field(default=None, metadata=OMIT_NONE)
    # The run was stopped stuck (--timeout or --stall): every process's stacks and where each one was (run/hang/).
    stuck: StuckCapture | None = field(default=None, metadata=OMIT_NONE)
    # The program failed (no signal of its own) after a process it started died by a signal (run/child_crash.py).
    child_crash: ChildCrash | None = field(default=None, metadata=OMIT_NONE)
    duration_s: float | None = None
    dump: DumpSummary | None = None
    smoke: SmokeReport | None = None
    archive: str | None = None  # <bundle>.tar.gz, with --archive
    # Multi-process runs only: every process (dump and smoke above are process 0's), the first to fail.
    processes: list[ProcessRecord] | None = None
    first_failed: int | None = None
    coordinator: str | None = None  # 127.0.0.1:PORT
    slurm: SlurmJobRecord | None = field(default=None, metadata=OMIT_NONE)  # ran as a Slurm job (--executor slurm)
    # What xlatools measured (compile times, memory, timed calls, peak RSS): records/metrics.py, docs/metrics.md.
    metrics: RunMetrics | None = field(default=None, metadata=OMIT_NONE)
