"""Facts about the target interpreter, read by probes/env_facts.py in the target (never
`import jax` here) and cached beside the run probe's answers (xlatools.run.target.TargetCache).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.proctree import run_captured
from xlatools.run.target import probe_timeout

PROBES = Path(__file__).resolve().parent / "probes"
CACHE_KEY = "doctor:facts"


@dataclass(frozen=True)
class TargetFacts:
    python: str
    python_version: str | None = None
    machine: str | None = None
    libc: str | None = None
    jax: str | None = None
    jax_source_version: str | None = None
    jax_version_file: str | None = None
    min_jaxlib: str | None = None
    jaxlib: str | None = None
    jaxlib_dir: str | None = None
    plugins: dict[str, str] = field(default_factory=dict)
    cuda_libs: dict[str, str] = field(default_factory=dict)  # nvidia-* pip wheels
    shared_objects: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict) -> "TargetFacts":
        known = {k: data.get(k) for k in cls.__dataclass_fields__ if k in data}
        known["shared_objects"] = tuple(known.get("shared_objects") or ())
        known["plugins"] = dict(known.get("plugins") or {})
        known["cuda_libs"] = dict(known.get("cuda_libs") or {})
        return cls(**known)

    def to_json(self) -> dict:
        data = asdict(self)
        data["shared_objects"] = list(self.shared_objects)
        return data


def _stamp(path: str | None) -> int | None:
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


def _jaxlib_origin(facts: TargetFacts) -> str | None:
    return os.path.join(facts.jaxlib_dir, "__init__.py") if facts.jaxlib_dir else None


def target_facts(python: str, timeout: float = 60) -> TargetFacts:
    """The facts for `python`, from the cache while neither jax nor jaxlib changed."""
    from xlatools.run.target import TargetCache

    cache = TargetCache(python)
    cached = cache.data.get(CACHE_KEY)
    if isinstance(cached, dict) and isinstance(cached.get("facts"), dict):
        try:
            if cached.get("jax_stamp") == _stamp(cached["facts"].get("jax_version_file")):
                return TargetFacts.from_json(cached["facts"])
        except (TypeError, ValueError, KeyError):
            pass  # a damaged cache entry: ask the interpreter again
    facts = _run(python, timeout)
    # TargetCache drops everything when the interpreter or jaxlib's __init__ changes; the jax
    # stamp covers a jax reinstalled alone (the classic way to get a mismatched pair).
    cache.remember(_jaxlib_origin(facts) or cache.data.get("jaxlib_origin"),
                   **{CACHE_KEY: {"facts": facts.to_json(), "jax_stamp": _stamp(facts.jax_version_file)}})
    return facts


def _run(python: str, timeout: float) -> TargetFacts:
    with tempfile.TemporaryDirectory(prefix="xlatools-doctor-") as tmp:
        out = os.path.join(tmp, "facts.json")
        try:
            proc = run_captured([python, str(PROBES / "env_facts.py"), out], cwd=tmp, timeout=probe_timeout(timeout))
        except OSError as exc:
            raise UsageError(f"--python {python}: cannot run it: {exc.strerror}",
                             hint="give the path of a Python interpreter") from None
        except subprocess.TimeoutExpired:
            raise EnvironmentMissing(f"reading versions from {python} took longer than {probe_timeout(timeout):g} s "
                                     "(stopped)", hint="XLATOOLS_PROBE_TIMEOUT_S sets the limit") from None
        try:
            with open(out) as handle:
                return TargetFacts.from_json(json.load(handle))
        except (OSError, ValueError):
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise EnvironmentMissing(f"--python {python}: the probe failed (exit {proc.returncode})" + (f": {tail}" if tail else ""),
                                     hint="is it a Python 3 interpreter?") from None
