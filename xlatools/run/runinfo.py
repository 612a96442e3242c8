"""The run a bundle records (its manifest.json), as `xlatools inspect` shows it before the modules.

Read through the one manifest reader (records.read_bundle): a damaged or foreign manifest is
bad input naming the file; a field an older xlatools did not write shows as "-".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from xlatools.records.run import RunManifest


@dataclass(kw_only=True)
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

    @classmethod
    def from_manifest(cls, bundle: Path, record: RunManifest) -> "RunInfo":
        def shown(value: object) -> str:
            return "-" if value is None else str(value)

        return cls(
            bundle=str(bundle), status=shown(record.status), exit_code=record.exit_code, returncode=record.returncode,
            signal=record.signal, command=shown(record.command),
            program=shown(record.program.label if record.program else None), jax=shown(record.jax.jax),
            jaxlib=shown(record.jax.jaxlib), backend=shown(record.jax.backend), python=shown(record.interpreter.python),
            platform=shown(record.platform), presets=[f"{p.kind}:{p.name}" for p in record.presets],
            xla_flags=list(record.xla_flags), duration_s=record.duration_s,
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
        ]


def read_run_info(path: Path) -> RunInfo | None:
    """The run of the bundle at `path` (the bundle, `latest`, or its xla_dump/); None for a plain
    dump folder. A manifest that cannot be read is reported as such (exit 2), not hidden."""
    from xlatools.records.base import MANIFEST, read_bundle

    path = Path(path).expanduser()
    for bundle in (path, path.parent):
        if (bundle / MANIFEST).exists():
            return RunInfo.from_manifest(bundle, cast(RunManifest, read_bundle(bundle, kinds=("run",))))
    return None
