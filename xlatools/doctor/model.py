"""Typed records of a doctor run: one Check per finding, the Report that sums them up."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlatools.errors import EXIT_FAILED, EXIT_OK
from xlatools.vocab import CheckStatus


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, its verdict, one line of evidence and, unless ok, the fix."""

    name: str
    status: CheckStatus
    evidence: str
    fix: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", CheckStatus(self.status))  # "ok" given as a plain string reads the same


def ok(name: str, evidence: str) -> Check:
    return Check(name, CheckStatus.OK, evidence)


def warn(name: str, evidence: str, fix: str) -> Check:
    return Check(name, CheckStatus.WARN, evidence, fix)


def fail(name: str, evidence: str, fix: str) -> Check:
    return Check(name, CheckStatus.FAIL, evidence, fix)


def skip(name: str, evidence: str) -> Check:
    return Check(name, CheckStatus.SKIP, evidence)


@dataclass(frozen=True, kw_only=True)
class DoctorOptions:
    """What the command line asked for."""

    python: str | None = None
    profile: str | None = None
    source: Path | None = None
    strict: bool = False


@dataclass(kw_only=True)
class DoctorResult:
    """`doctor --json`: the exit code, the counts per status and every check."""

    exit_code: int
    strict: bool
    counts: dict[CheckStatus, int]
    checks: list[Check]


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    strict: bool = False

    def counts(self) -> dict[CheckStatus, int]:
        return {status: sum(1 for c in self.checks if c.status == status) for status in CheckStatus}

    @property
    def exit_code(self) -> int:
        """0 all fine; 1 a failure (or, with --strict, a warning)."""
        counts = self.counts()
        return EXIT_FAILED if counts[CheckStatus.FAIL] or (self.strict and counts[CheckStatus.WARN]) else EXIT_OK

    def result(self) -> DoctorResult:
        return DoctorResult(
            exit_code=self.exit_code, strict=self.strict, counts=self.counts(), checks=list(self.checks)
        )
