"""The numbers of a metric test in the bisect state (`bisect.json`): every run's value of a step, a noise-aware
bisection's anchors and boundary, a timeline's rows and steps, `bisect flags`' table (bisect/noise.py and
docs/bisect.md say how they are judged)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xlatools.records.base import OMIT_NONE
from xlatools.vocab import StepOutcome


@dataclass(kw_only=True)
class MetricRuns:
    """A metric measured on one candidate: a value per run (the best of the samples that run reported) and each
    run's bundle; the median and spread over the runs; where it stands between the anchors (noise-aware tests)."""

    name: str
    values: list[float] = field(default_factory=list)
    bundles: list[str] = field(default_factory=list)
    centre: float | None = None  # median of the values
    spread: float | None = None  # robust standard deviation: relative (0.02 = 2 %) when `relative`, else absolute
    relative: bool = True
    position: float | None = field(default=None, metadata=OMIT_NONE)  # 0 = like the good end, 1 = like the bad end
    margin: float | None = field(default=None, metadata=OMIT_NONE)  # of the position: the verdict's certainty
    # a run of the good end, then the bad end, ... beside each run (values), and the drift taken out (scale units)
    references: list[float] = field(default_factory=list)
    drift: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class MetricAnswer:
    """A noise-aware metric bisection's numbers: the anchors, how far apart, and the boundary measured side by side."""

    name: str
    good: MetricRuns  # the good end (or, with one anchor, the virtual one: no values)
    bad: MetricRuns
    gap_se: float | None = None  # the ends' gap in standard errors (None: exact, or one anchor)
    pairs_worse: float | None = None  # share of (good run, bad run) pairs where the bad run is worse
    exact: bool = False  # every run of each end gave the same value
    ratio: float | None = None  # bad / good (medians)
    boundary: list[MetricRuns] = field(default_factory=list)  # last good, first bad, interleaved once more
    boundary_differ: bool | None = None  # None: not measured again (exact metric, or the boundary is the ends)


@dataclass(kw_only=True)
class TimelineRow:
    """One release of a timeline: its runs, their median and spread, and the ratio to the release before it."""

    key: str
    label: str
    runs: MetricRuns | None = None  # None: not measured (skip)
    ratio: float | None = None  # median / the previous measured release's median
    change: Literal["up", "down"] | None = None  # differs from the previous measured release beyond noise
    skipped: str | None = None  # why it has no value


@dataclass(kw_only=True)
class TimelineStep:
    """A change beyond noise between two neighbouring measured releases."""

    before: str  # release keys
    after: str
    direction: Literal["up", "down"]  # the value went up or down
    worse: bool  # in the metric's sense (up is worse unless --higher-is-better)
    ratio: float


@dataclass(kw_only=True)
class TimelineResult:
    metric: str
    higher_is_better: bool = False
    exact: bool = False  # every run of each release gave the same value
    rows: list[TimelineRow] = field(default_factory=list)
    steps: list[TimelineStep] = field(default_factory=list)
    svg: str | None = None  # timeline.svg
    html: str | None = None  # timeline.html (the table and the picture)


@dataclass(kw_only=True)
class FlagRow:
    """One switch of the table as `bisect flags` found it."""

    name: str
    flag: str
    what: str
    tried: bool  # False: not for this backend or jaxlib, or not in its flag list (`why`)
    outcome: StepOutcome | None = None  # good: it recovers
    reason: str = ""
    bundle: str | None = None
    why: str | None = None  # why it was not tried


@dataclass(kw_only=True)
class FlagsResult:
    jaxlib: str | None
    backend: str
    baseline: str  # how the program as it is was judged
    rows: list[FlagRow] = field(default_factory=list)
    recovers: list[str] = field(default_factory=list)  # the switches that turn bad into good
