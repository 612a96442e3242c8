"""The run a bundle records (its manifest.json), as `xlatools inspect` shows it before the modules.

Reads leniently: bundles written by older or newer xlatools may lack a field; a missing
field shows as "-", never as an error.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


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

    @classmethod
    def from_manifest(cls, bundle: Path, data: dict[str, Any]) -> "RunInfo":
        def part(key: str) -> dict[str, Any]:
            value = data.get(key)
            return value if isinstance(value, dict) else {}

        jax, interpreter, program = part("jax"), part("interpreter"), part("program")
        presets = [f"{p.get('kind')}:{p.get('name')}" if isinstance(p, dict) else str(p) for p in data.get("presets") or []]
        return cls(
            bundle=str(bundle), status=str(data.get("status", "-")), exit_code=data.get("exit_code"),
            returncode=data.get("returncode"), signal=data.get("signal"), command=str(data.get("command", "-")),
            program=str(program.get("label", "-")), jax=str(jax.get("jax", "-")), jaxlib=str(jax.get("jaxlib", "-")),
            backend=str(jax.get("backend", "-")), python=str(interpreter.get("python", "-")),
            platform=str(data.get("platform", "-")), presets=presets, xla_flags=[str(f) for f in data.get("xla_flags") or []],
            duration_s=data.get("duration_s"),
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_run_info(path: Path) -> RunInfo | None:
    """The run of the bundle at `path` (the bundle, `latest`, or its xla_dump/); None for a plain
    dump folder. A manifest that cannot be read is reported as such, not hidden."""
    path = Path(path).expanduser()
    for bundle in (path, path.parent):
        manifest = bundle / "manifest.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                from xlatools.errors import UsageError

                raise UsageError(f"{manifest}: unreadable ({exc})", hint="the bundle is damaged; inspect its xla_dump/ directly") from None
            from xlatools.redact import redact

            return RunInfo.from_manifest(bundle, redact(data) if isinstance(data, dict) else {})
    return None
