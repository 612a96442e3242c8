"""The state of `xlatools triage --metric` (`perf-triage.json` in the triage folder): a slowdown or a growth
triaged: the release bisection with the metric, the timeline of the releases it measured, the switch that
recovers, the module that grew most, and ISSUE.md. Written after every stage; read back to continue."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from xlatools.records.base import OMIT_NONE
from xlatools.records.bisect_metric import MetricAnswer, TimelineResult
from xlatools.records.triage import ReleasesFound, TriageSpec
from xlatools.vocab import StageStatus

PERF_SCHEMA = "xlatools.triage-perf/1"


class PerfStage(StrEnum):
    """The stages of a metric triage, in the order they run (docs/triage.md)."""

    RELEASES = "releases"  # bisect releases with the metric: last good, first bad, the anchors' numbers
    TIMELINE = "timeline"  # the releases the bisection measured, as a table and a picture
    FLAGS = "flags"  # bisect flags on first bad (last good the good anchor): the switch that recovers
    GROWTH = "growth"  # the modules of last good and first bad compared: the one that grew most
    REPORT = "report"  # ISSUE.md


@dataclass(kw_only=True)
class PerfStageRecord:
    stage: PerfStage
    status: StageStatus = StageStatus.PENDING
    reason: str = ""
    exit_code: int | None = None
    basis: str = ""  # what it was computed from: a stage done before runs again when this changed
    started: str | None = None
    finished: str | None = None
    seconds: float | None = None


@dataclass(kw_only=True)
class FlagsFound:
    folder: str
    python: str  # first bad's interpreter
    good_python: str | None = None  # last good's, the good anchor of a noise-aware metric
    recovers: list[str] = field(default_factory=list)  # switch names
    flags: list[str] = field(default_factory=list)  # their XLA flags, in the same order
    reasons: list[str] = field(default_factory=list)  # what each measured with its switch, in the same order
    tried: int = 0
    table: list[str] = field(default_factory=list)  # the table as printed


@dataclass(kw_only=True)
class ModuleGrowth:
    """One compiled module, last good against first bad."""

    name: str
    metric: str  # the per-module metric compared (the triage's, or temp_bytes / compile_s / run_s)
    good: float | None = None
    bad: float | None = None
    ratio: float | None = None


@dataclass(kw_only=True)
class GrowthFound:
    good_bundle: str
    bad_bundle: str
    modules: list[ModuleGrowth] = field(default_factory=list)  # biggest growth first
    note: str | None = None


@dataclass(kw_only=True)
class PerfTriageState:
    schema: str = PERF_SCHEMA
    spec: TriageSpec
    spec_hash: str = ""
    created: str = ""
    updated: str | None = None
    folder: Path | None = None
    stages: list[PerfStageRecord] = field(default_factory=list)
    releases: ReleasesFound | None = None
    metric: MetricAnswer | None = field(default=None, metadata=OMIT_NONE)  # the bisection's numbers
    timeline: TimelineResult | None = None
    flags: FlagsFound | None = None
    growth: GrowthFound | None = None
    issue: str | None = None
    exit_code: int | None = None

    def record(self, stage: PerfStage) -> PerfStageRecord:
        for record in self.stages:
            if record.stage == stage:
                return record
        record = PerfStageRecord(stage=stage)
        self.stages.append(record)
        return record
