"""The run a bundle records (its manifest.json), as `xlatools inspect` shows it before the modules.

Read through the one reader (records.read_bundle): fields an older xlatools did not write show
as "-"; a damaged or foreign manifest is bad input (exit 2) naming the file and the key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from xlatools.records.base import MANIFEST
from xlatools.records.metrics import RunMetrics
from xlatools.records.run import RUN_KINDS, RunManifest


def _text(value: object) -> str:
    return "-" if value is None else str(value)


@dataclass
class RunInfo:
    bundle: str
    status: str
    exit_code: int | None
    returncode: int | None
    signal: str | None
    command: str
    program: str
    jax: str
    jaxlib: str
    backend: str
    python: str
    platform: str
    presets: list[str] = field(default_factory=list)
    xla_flags: list[str] = field(default_factory=list)
    duration_s: float | None = None
    warnings: list[str] = field(default_factory=list)
    metrics: RunMetrics | None = None  # what xlatools measured (docs/metrics.md)
    crash: list[str] = field(default_factory=list)  # run/stopped.py: the signal and where, when it crashed
    stuck: list[str] = field(default_factory=list)  # where every process was, when it was stopped stuck

    @classmethod
    def from_manifest(cls, bundle: Path, record: RunManifest) -> "RunInfo":
        from xlatools.run.stopped import crash_lines, stuck_lines

        jax = record.jax
        return cls(
            bundle=str(bundle),
            status=_text(record.status),
            exit_code=record.exit_code,
            returncode=record.returncode,
            signal=record.signal,
            command=_text(record.command),
            program=_text(record.program.label if record.program else None),
            jax=_text(jax.jax),
            jaxlib=_text(jax.jaxlib),
            backend=_text(jax.backend),
            python=_text(record.interpreter.python),
            platform=_text(record.platform),
            presets=[f"{p.kind}:{p.name}" for p in record.presets],
            xla_flags=list(record.xla_flags),
            duration_s=record.duration_s,
            warnings=list(record.warnings or []),
            metrics=record.metrics,
            crash=crash_lines(bundle, record),
            stuck=stuck_lines(record),
        )

    def lines(self) -> list[str]:
        outcome = f"exit {self.exit_code if self.exit_code is not None else '-'}"
        if self.signal:
            outcome += f", program killed by {self.signal}"
        elif self.returncode is not None and self.returncode != self.exit_code:
            outcome += f", program exit {self.returncode}"
        duration = f" in {self.duration_s} s" if self.duration_s is not None else ""
        return [
            f"run:       {self.status} ({outcome}){duration}",
            f"command:   {self.command}",
            f"program:   {self.program}",
            f"jax:       jax {self.jax} / jaxlib {self.jaxlib} on {self.backend} ({self.python}); --platform {self.platform}",
            f"presets:   {', '.join(self.presets) or '-'}",
            f"XLA_FLAGS: {' '.join(self.xla_flags) or '-'}",
            *(f"warning:   {warning}" for warning in self.warnings),
            *self.crash,
            *self.stuck,
        ]


def read_run_info(path: Path) -> RunInfo | None:
    """The run of the bundle at `path` (the bundle, `latest`, or its xla_dump/); None for a plain
    dump folder. A manifest that cannot be read is reported as such, not hidden."""
    from xlatools.records import read_bundle

    path = Path(path).expanduser()
    for bundle in (path, path.parent):
        if bundle.is_dir() and os.path.lexists(bundle / MANIFEST):
            return RunInfo.from_manifest(bundle, cast(RunManifest, read_bundle(bundle, kinds=RUN_KINDS)))
    return None
