"""Typed records of a doctor run: one Check per finding, the Report that sums them up."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

Status = Literal["ok", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "skip")


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, its verdict, one line of evidence and, unless ok, the fix."""

    name: str
    status: Status
    evidence: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def ok(name: str, evidence: str) -> Check:
    return Check(name, "ok", evidence)


def warn(name: str, evidence: str, fix: str) -> Check:
    return Check(name, "warn", evidence, fix)


def fail(name: str, evidence: str, fix: str) -> Check:
    return Check(name, "fail", evidence, fix)


def skip(name: str, evidence: str) -> Check:
    return Check(name, "skip", evidence)


@dataclass(frozen=True)
class DoctorOptions:
    """What the command line asked for."""

    python: str | None = None
    profile: str | None = None
    source: Path | None = None
    strict: bool = False


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    strict: bool = False

    def counts(self) -> dict[str, int]:
        return {status: sum(1 for c in self.checks if c.status == status) for status in STATUSES}

    @property
    def exit_code(self) -> int:
        """0 all fine; 1 a failure (or, with --strict, a warning)."""
        counts = self.counts()
        return 1 if counts["fail"] or (self.strict and counts["warn"]) else 0

    def to_json(self) -> dict:
        return {"exit_code": self.exit_code, "strict": self.strict, "counts": self.counts(),
                "checks": [c.to_json() for c in self.checks]}
