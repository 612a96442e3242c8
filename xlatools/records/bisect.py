"""The bisect state file (`bisect.json`): what was asked (the spec), the candidates, every step,
the status and the answer. Written after every step, read back to continue a bisection.

Field names and shapes are those of the state files xlatools has written since
`xlatools.bisect/1` (tests/fixtures/bundles-v1/bisect-passes), so a bisection started by an
older release reads and continues."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Union

from xlatools.records.base import KEYWORD_KEYS, OMIT_NONE
from xlatools.records.bisect_metric import FlagsResult, MetricAnswer, MetricRuns, TimelineResult
from xlatools.records.build import BazelProcesses
from xlatools.vocab import BisectStatus, Platform, StepOutcome

SCHEMA = "xlatools.bisect/1"
BisectKind = Literal["releases", "commits", "passes", "timeline", "flags"]


@dataclass(frozen=True, kw_only=True)
class RuleSpec:
    """How a finished run becomes good, bad or skip (bisect.rule.Rule adds the judging)."""

    bad_exit: tuple[int, ...] = ()  # empty: any non-zero exit is bad
    skip_exit: tuple[int, ...] = (125,)  # git bisect run's convention
    match: str | None = None
    match_in: str = "output"  # "output" or "dump:<part of a dump file name>", e.g. dump:after_optimizations
    metric: str | None = None
    threshold: float | None = None
    higher_is_better: bool = False
    # bisect passes --module M: a dump match is looked for in M's files only
    hlo_module: str | None = field(default=None, metadata=OMIT_NONE)
    # --metric without --threshold (noise-aware, bisect/noise.py): runs of each end, and the most runs of one step
    repeat: int | None = field(default=None, metadata=OMIT_NONE)
    max_runs: int | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class ProgramTestSpec:
    """A program run per step (checks.ProgramTest)."""

    kind: Literal["program"] = "program"
    program: str  # its label: the script, `-m module` or smoke:NAME
    args: list[str] = field(default_factory=list)
    rule: RuleSpec = field(default_factory=RuleSpec)
    presets: list[str] = field(default_factory=list)
    xla_flags: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    platform: Platform | None = None
    timeout: float | None = None


@dataclass(kw_only=True)
class ReplayTestSpec:
    """A repro pack replayed per step (checks.ReplayTest)."""

    kind: Literal["replay"] = "replay"
    pack: str


TestSpec = Union[ProgramTestSpec, ReplayTestSpec]


@dataclass(kw_only=True)
class ReleaseSpec:
    kind: Literal["releases"] = "releases"
    good: str
    bad: str
    python_version: str
    platform: str  # of the step environments: cpu or gpu
    nightly: bool = False
    confirm: int = 0
    test: TestSpec
    requirements: list[str] | None = field(default=None, metadata=OMIT_NONE)  # --with / --requirements


@dataclass(kw_only=True)
class PassSpec:
    kind: Literal["passes"] = "passes"
    python: str
    module: str | None = None
    confirm: int = 0
    test: TestSpec
    good_python: str | None = field(default=None, metadata=OMIT_NONE)  # a noise-aware --metric's good anchor


@dataclass(kw_only=True)
class CommitSpec:
    kind: Literal["commits"] = "commits"
    which: Literal["xla", "jax"]
    good: str
    bad: str
    repo: str
    source: str
    profile: str
    local: bool = False
    python: str
    confirm: int = 0
    test: TestSpec


@dataclass(kw_only=True)
class TimelineSpec:
    """`bisect timeline`: every release from `first` to `last` measured `repeat` times."""

    kind: Literal["timeline"] = "timeline"
    first: str
    last: str
    python_version: str
    platform: str
    repeat: int
    test: TestSpec
    requirements: list[str] | None = field(default=None, metadata=OMIT_NONE)  # --with / --requirements


@dataclass(kw_only=True)
class FlagsSpec:
    """`bisect flags`: the switches of switches.yaml tried on one interpreter."""

    kind: Literal["flags"] = "flags"
    python: str
    backend: str  # cpu or gpu
    switches: list[str]  # the names tried (applicable, accepted by this jaxlib)
    good_python: str | None = field(default=None, metadata=OMIT_NONE)  # a metric test's good reference
    test: TestSpec


# What was asked: the same command finds its folder again by it (bisect.state.spec_hash).
BisectSpec = Union[ReleaseSpec, PassSpec, CommitSpec, TimelineSpec, FlagsSpec]


@dataclass(frozen=True, kw_only=True)
class Candidate:
    key: str  # a version, a commit, a pass name
    label: str


@dataclass(frozen=True, kw_only=True)
class CandidateRef(Candidate):
    """A boundary of the answer and the step bundle that showed it."""

    bundle: str | None = None


@dataclass(kw_only=True)
class StepDetail:
    """What a program step's run found out about its environment."""

    exit_code: int | None = None
    jax: str | None = None
    jaxlib: str | None = None


@dataclass(frozen=True, kw_only=True)
class StepRecord:
    n: int  # 1-based, in the order the steps ran
    key: str  # the candidate's key (a version, a commit, a set of passes)
    label: str
    role: str  # "good end", "bad end", "search", "confirm"; passes: "baseline", "disable all", "needed", "took over"
    attempt: int  # 0 for the first run of this key, 1.. for --confirm re-runs
    outcome: StepOutcome
    reason: str = ""
    bundle: str | None = None
    install_s: float = 0.0
    run_s: float = 0.0
    started: str = ""
    finished: str = ""
    detail: StepDetail | None = None
    # bisect commits: how the step's build ran its actions (cache hits: the profile's caches are shared by every step)
    bazel_processes: BazelProcesses | None = field(default=None, metadata=OMIT_NONE)
    metric: MetricRuns | None = field(default=None, metadata=OMIT_NONE)  # --metric: every run's value


@dataclass(kw_only=True)
class ConfirmRuns:
    """The outcome of every run of the two boundary candidates (the first run included)."""

    last_good: list[StepOutcome] = field(default_factory=list)
    first_bad: list[StepOutcome] = field(default_factory=list)


@dataclass(kw_only=True)
class PassFound:
    name: str
    pipelines: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class PassNote:
    """bisect passes: a pass left enabled (the backend needs it, --exclude-pass, disabling it broke the program)
    or one that became a candidate during the search, and why."""

    name: str
    why: str


@dataclass(kw_only=True)
class CulpritHlo:
    """A culprit pass in one module of the bad run: the dump files around it and their diff."""

    __pydantic_config__ = KEYWORD_KEYS
    pass_: str
    pipeline: str
    module: str
    before: str
    after: str
    diff: str
    lines_changed: int


@dataclass(kw_only=True)
class Divergence:
    """The first pass whose output differs between last-good and first-bad."""

    __pydantic_config__ = KEYWORD_KEYS
    module: str
    pass_: str
    pipeline: str | None = None


@dataclass(kw_only=True)
class DiffNote:
    """Last-good vs first-bad by the compare capability, or why there is no such diff."""

    available: bool
    json: str | None = None  # diff.json
    report: str | None = None  # report.html
    modules_differ: bool | None = None
    first_divergence: Divergence | None = None
    note: str | None = None


@dataclass(kw_only=True)
class BisectAnswer:
    last_good: CandidateRef
    first_bad: CandidateRef
    maybe_first_bad: list[Candidate] = field(default_factory=list)  # skipped between them
    confirm: ConfirmRuns = field(default_factory=ConfirmRuns)
    flaky: bool = False  # the boundary steps disagreed on --confirm re-runs
    passes: list[PassFound] = field(default_factory=list)  # bisect passes: the culprits
    how: str | None = None  # bisect passes: how the culprit set was found
    left_enabled: list[PassNote] = field(default_factory=list)  # bisect passes: never disabled, and why
    added: list[PassNote] = field(default_factory=list)  # bisect passes: candidates found during the search
    hlo: list[CulpritHlo] = field(default_factory=list)
    report_lines: list[str] = field(default_factory=list)  # printed under the steps
    diff: DiffNote | None = None
    metric: MetricAnswer | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class TestFile:
    """A file the test is made of (its program, a module, a pack, a file an argument names) as it was when the
    bisection started: a resumed bisection compares them (bisect/testfiles.py)."""

    __test__ = False  # not a pytest class, despite the name
    role: str  # program, module, pack, argument
    path: str
    sha256: str | None = None  # None: missing, unreadable or too large to hash (see note)
    size: int | None = None
    note: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class PassOptions:
    """bisect passes: what the search leaves enabled or adds, on top of what the spec asks. Not part of the
    spec: steps are experiments (a set of disabled passes -> an outcome) that any of these reuse."""

    exclude: list[str] = field(default_factory=list)  # --exclude-pass
    include: list[str] = field(default_factory=list)  # --include-pass


@dataclass(kw_only=True)
class BisectState:
    schema: str = SCHEMA
    kind: BisectKind
    spec: BisectSpec
    spec_hash: str = ""
    created: str = ""
    updated: str | None = None
    status: BisectStatus = BisectStatus.RUNNING
    message: str | None = None
    candidates: list[Candidate]  # oldest first (releases, commits) or the passes that changed a module
    notes: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    result: BisectAnswer | None = None
    folder: Path | None = None  # the bisect folder (where it was when written)
    timeline: TimelineResult | None = field(default=None, metadata=OMIT_NONE)  # bisect timeline
    flags: FlagsResult | None = field(default=None, metadata=OMIT_NONE)  # bisect flags
    # What the test was made of when the bisection started (None: written before xlatools recorded it).
    test_files: list[TestFile] | None = field(default=None, metadata=OMIT_NONE)
    pass_options: PassOptions | None = field(default=None, metadata=OMIT_NONE)  # bisect passes
