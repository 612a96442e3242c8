"""The triage state file (`triage.json`): what was asked, each stage's status, and what each stage found.

Written after every stage; read back (records.read_record) to continue, so a triage that was
interrupted, or whose stage could not run, goes on where it stopped when the same command runs again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlatools.records.base import OMIT_NONE
from xlatools.records.bisect import ProgramTestSpec
from xlatools.records.replay import IsolatedInstruction
from xlatools.vocab import StageStatus, TriageStage

TRIAGE_SCHEMA = "xlatools.triage/1"


@dataclass(kw_only=True)
class TriageSpec:
    """What identifies a triage: the same command finds its folder again by it."""

    good: str
    bad: str
    python_version: str
    platform: str  # of the release environments: cpu or gpu
    test: ProgramTestSpec
    atol: float
    rtol: float
    requirements: list[str] | None = field(default=None, metadata=OMIT_NONE)  # --with / --requirements


@dataclass(kw_only=True)
class StageRecord:
    stage: TriageStage
    status: StageStatus = StageStatus.PENDING
    reason: str = ""  # what it found in one line, or why it did not run
    exit_code: int | None = None  # the capability's exit code when the stage did not end done
    basis: str = ""  # what the stage was computed from (a kept stage whose basis changed runs again)
    started: str | None = None
    finished: str | None = None
    seconds: float | None = None


@dataclass(kw_only=True)
class ReleasesFound:
    last_good: str
    first_bad: str
    folder: str | None = None  # the bisect folder (None: the stage was skipped, the ends as given)
    last_good_bundle: str | None = None
    first_bad_bundle: str | None = None
    steps: int = 0


@dataclass(kw_only=True)
class SideRun:
    """A dumping run of the program on one release."""

    version: str
    python: str
    bundle: str
    exit_code: int | None = None


@dataclass(kw_only=True)
class DumpsFound:
    last_good: SideRun
    first_bad: SideRun


@dataclass(kw_only=True)
class ModuleVerdict:
    """One program module of the first-bad run, replayed against the last-good release."""

    name: str
    id: int | None = None
    outcome: str  # the replay outcome (mismatch, ok, compile-error, ...)
    optimized_differs: bool | None = None  # its optimised HLO differs from the last-good run's


@dataclass(kw_only=True)
class CrashFound:
    """A module that dies on the first bad release and runs on the last good one: the finding of a crash
    regression (a signal while running or compiling, or a compiler error such as a failed CHECK or INTERNAL)."""

    failure: str  # crash | compile-error | runtime-error (replay's outcome of the test run)
    phase: str | None = None  # compile | run | ...: where it died
    signal: str | None = None  # SIGSEGV, SIGABRT, ...
    message: str = ""  # the first line that says what happened
    frames: list[str] = field(default_factory=list)  # the crashing thread's top native frames (symbolized)
    backtrace: str | None = None  # native-backtrace.txt of the replay that crashed
    reference: str = "ok"  # the last good release's outcome on the same module and inputs

    def what(self) -> str:
        """`SIGSEGV while running`, `compile-error while compiling: INTERNAL: ...`."""
        doing = {"compile": "while compiling", "run": "while running"}.get(self.phase or "", f"during {self.phase}")
        head = f"{self.signal} {doing}" if self.signal else f"{self.failure} {doing}"
        return head + (f": {self.message}" if self.message and not self.signal else "")


@dataclass(kw_only=True)
class DiffFound:
    json: str  # diff.json of the two dumping runs
    report: str  # report.html
    modules_differ: bool
    first_divergence: str | None = None  # the first pass whose output differs (compare's alignment)
    replay_bundle: str | None = None  # first-bad's modules replayed with last-good as the reference
    modules: list[ModuleVerdict] = field(default_factory=list)
    module: str | None = None  # the module that mismatches (id or name, as --module takes it)
    module_name: str | None = None
    module_label: str | None = None
    mismatch: str | None = None  # how it mismatches
    # No module mismatches: these differ only by precision (None: not that finding).
    precision_only: list[str] | None = field(default=None, metadata=OMIT_NONE)
    # The module (above) crashes on the first bad release and runs on the last good one (None: not a crash).
    crash: CrashFound | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class PassesFound:
    folder: str
    culprits: list[str] = field(default_factory=list)  # empty: no HLO pass makes the difference (note says why)
    how: str | None = None
    diffs: list[str] = field(default_factory=list)  # HLO before -> after each culprit in the first-bad run
    note: str | None = None


@dataclass(kw_only=True)
class ReduceFound:
    bundle: str
    instructions_before: int
    instructions_after: int
    oracle_calls: int
    flaky: bool = False
    issue: str | None = None  # the reduce bundle's ISSUE.md
    reduced: str | None = None  # reduced.hlo.txt
    # Not reduced (its HLO text no longer reproduces): the smallest form that does, the module's StableHLO; and why
    handed_over: str | None = field(default=None, metadata=OMIT_NONE)
    note: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class IsolateFound:
    bundle: str
    file: str  # isolate.json
    module: str  # which module was isolated (the reduced one, or the module that differs)
    first_mismatch: IsolatedInstruction | None = None
    first_mismatch_in_context: IsolatedInstruction | None = None
    form: str | None = field(default=None, metadata=OMIT_NONE)  # what the module was read from: `HLO text (FILE)`


@dataclass(kw_only=True)
class TriageState:
    schema: str = TRIAGE_SCHEMA
    spec: TriageSpec
    spec_hash: str = ""
    created: str = ""
    updated: str | None = None
    folder: Path | None = None
    stages: list[StageRecord] = field(default_factory=list)  # in stage order
    releases: ReleasesFound | None = None
    dumps: DumpsFound | None = None
    diff: DiffFound | None = None
    passes: PassesFound | None = None
    reduce: ReduceFound | None = None
    isolate: IsolateFound | None = None
    issue: str | None = None  # ISSUE.md of the triage (report stage)
    exit_code: int | None = None

    def record(self, stage: TriageStage) -> StageRecord:
        for record in self.stages:
            if record.stage == stage:
                return record
        record = StageRecord(stage=stage)
        self.stages.append(record)
        return record
