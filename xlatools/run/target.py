"""The target interpreter: the Python that runs the program under test.

xlatools never imports jax itself; a probe script (probes/target_info.py) runs
in the target and reports versions and devices. Answers are cached per
interpreter path, invalidated when the interpreter or its jaxlib changes
(their mtimes), so a run pays for the probe once.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.fsutil import atomic_write_json, cache_root
from xlatools.run.flags import bad_value_from_abort, join_flags, table_verdict, unknown_from_abort

PROBES = Path(__file__).resolve().parent / "probes"
CACHE_VERSION = 2


@dataclass
class Target:
    python: str
    python_version: str | None = None
    jax: str | None = None
    jaxlib: str | None = None
    jaxlib_origin: str | None = None
    numpy: str | None = None
    plugins: list[str] = field(default_factory=list)
    backend: str | None = None
    devices: list[dict[str, Any]] = field(default_factory=list)
    devices_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def has_gpu(self) -> bool:
        return any(d.get("platform") not in ("cpu", None) for d in self.devices)

    def gpu_platform(self) -> str:
        return "rocm" if any("rocm" in p for p in self.plugins) else "cuda"


def resolve_python(spec: str | None) -> str:
    """Absolute path of the target interpreter. Symlinks are kept: a venv's python is a link."""
    if not spec:
        return sys.executable
    path = Path(spec).expanduser()
    if os.sep not in spec and not path.exists():
        import shutil

        found = shutil.which(spec)
        if found:
            return found
    if not path.exists():
        raise UsageError(f"--python {spec}: no such file", hint="give the path of a Python interpreter, e.g. ~/venvs/jax/bin/python")
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "python"):
            if candidate.exists():
                return os.path.abspath(candidate)
        raise UsageError(f"--python {spec}: a directory without bin/python", hint="give the interpreter itself or a venv directory")
    if not os.access(path, os.X_OK):
        raise UsageError(f"--python {spec}: not executable", hint="give the path of a Python interpreter")
    return os.path.abspath(path)


def _stamp(path: str | None) -> int | None:
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


class TargetCache:
    """One JSON file per interpreter: its probe answers and known flag verdicts."""

    def __init__(self, python: str):
        self.python = python
        digest = hashlib.sha256(python.encode()).hexdigest()[:16]
        self.path = cache_root() / "targets" / f"{digest}.json"
        self.data = self._read()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if data.get("cache_version") != CACHE_VERSION or data.get("python") != self.python:
            return {}
        if data.get("python_stamp") != _stamp(self.python) or data.get("jaxlib_stamp") != _stamp(data.get("jaxlib_origin")):
            return {}  # reinstalled or rebuilt: everything we knew may be wrong
        return data

    def remember(self, jaxlib_origin: str | None, **entries: Any) -> None:
        """Store `entries` with the stamps that tell when they go stale, and save."""
        self.data.update(entries, python_stamp=_stamp(self.python), jaxlib_origin=jaxlib_origin,
                         jaxlib_stamp=_stamp(jaxlib_origin))
        self.save()

    def save(self) -> None:
        try:
            atomic_write_json(self.path, {**self.data, "cache_version": CACHE_VERSION, "python": self.python})
        except OSError:
            pass  # a cache we cannot write only costs time


def _run_probe(python: str, args: list[str], env: dict[str, str], timeout: float) -> tuple[dict | None, subprocess.CompletedProcess]:
    with tempfile.TemporaryDirectory(prefix="xlatools-probe-") as tmp:
        out = os.path.join(tmp, "out.json")
        try:
            proc = subprocess.run(
                [python, str(PROBES / "target_info.py"), out, *args],
                cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout,
            )
        except OSError as exc:
            raise UsageError(f"--python {python}: cannot run it: {exc.strerror}", hint="give the path of a Python interpreter") from None
        except subprocess.TimeoutExpired:
            raise EnvironmentMissing(f"probing {python} took longer than {timeout:.0f} s", hint="is jax importable there?") from None
        try:
            with open(out) as handle:
                return json.load(handle), proc
        except (OSError, ValueError):
            return None, proc


def _probe_env(platform: str, xla_flags: list[str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    if xla_flags:
        env["XLA_FLAGS"] = join_flags(xla_flags)
    if platform == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    elif platform == "gpu":
        env.pop("JAX_PLATFORMS", None)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    return env


def probe(python: str, platform: str = "auto", timeout: float = 120) -> Target:
    """Versions and devices of `python` (cached)."""
    cache = TargetCache(python)
    key = f"devices:{platform}"
    if cache.data.get(key):
        return Target(**cache.data[key])
    _progress(f"probing {python} (jax/jaxlib versions, devices; cached afterwards)")
    info, proc = _run_probe(python, ["--devices"], _probe_env(platform), timeout)
    if info is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise EnvironmentMissing(
            f"--python {python}: the probe failed (exit {proc.returncode})" + (": " + " | ".join(tail) if tail else ""),
            hint="is it a Python 3 interpreter?",
        )
    if not info.get("jax") or not info.get("jaxlib"):
        missing = " and ".join(name for name in ("jax", "jaxlib") if not info.get(name))
        raise EnvironmentMissing(
            f"{python} has no {missing}",
            hint=f"install them there ({python} -m pip install jax jaxlib) or pick another --python",
        )
    target = Target(**{k: info.get(k) for k in Target.__dataclass_fields__ if k in info})
    if target.devices_error is None:  # a failed device query may be transient (GPU busy): do not cache it
        cache.remember(target.jaxlib_origin, **{key: target.to_json()})
    return target


def unknown_flags(target: Target, names_to_flags: dict[str, str], timeout: float = 120) -> tuple[list[str], dict[str, str]]:
    """The flag names `target` does not accept, and how each verdict was reached ("table", "probe", "cache")."""
    cache = TargetCache(target.python)
    verdicts: dict[str, bool] = {}
    how: dict[str, str] = {}
    unsure: dict[str, str] = {}
    known = cache.data.get("flags", {})
    for name, flag in names_to_flags.items():
        verdict = table_verdict(name, target.jaxlib)
        if verdict is not None:
            verdicts[name], how[name] = verdict, "table"
        elif name in known:
            verdicts[name], how[name] = known[name], "cache"
        else:
            unsure[name] = flag
    if unsure:
        _progress(f"checking XLA flag(s) {', '.join(unsure.values())} with jaxlib {target.jaxlib} (not decided by the table)")
        for name, verdict in _probe_flags(target.python, unsure, timeout).items():
            verdicts[name], how[name] = verdict, "probe"
            known[name] = verdict
        if target.jaxlib_origin:
            cache.remember(target.jaxlib_origin, flags=known)
    return sorted(name for name, ok in verdicts.items() if not ok), how


def _progress(message: str) -> None:
    sys.stderr.write(f"==> {message}\n")
    sys.stderr.flush()


def _probe_flags(python: str, flags: dict[str, str], timeout: float) -> dict[str, bool]:
    """Start jax's CPU backend in the target with `flags` and read which ones XLA refuses."""
    def attempt(subset: dict[str, str]) -> tuple[bool, list[str] | None, str]:
        _, proc = _run_probe(python, ["--devices"], _probe_env("cpu", list(subset.values())), timeout)
        if proc.returncode == 0:
            return True, [], ""
        return False, unknown_from_abort(proc.stderr), proc.stderr

    ok, unknown, stderr = attempt(flags)
    if ok:
        return {name: True for name in flags}
    refused = bad_value_from_abort(stderr)
    if unknown is None and refused is not None:
        name, value, kind = refused
        flag = flags.get(name, f"--{name}={value}")
        raise UsageError(f"XLA refuses the value of {flag}: {value!r} is not a{' ' + kind if kind else ' valid value'}"
                         f" for --{name}", hint="fix the value (`XLA_FLAGS=--help python -c 'import jax; jax.devices()'` "
                         "lists the flags XLA prints with their types)")
    if unknown is None:
        lines = [line for line in stderr.strip().splitlines() if not line.startswith("\t--")]  # no flag table
        tail = " | ".join(lines[-2:])[:500]
        raise EnvironmentMissing(
            f"cannot tell whether {python} accepts {', '.join(flags.values())}: the probe failed: {tail}",
            hint="run it by hand: XLA_FLAGS=... python -c 'import jax; jax.devices()'",
        )
    verdicts = {name: name not in unknown for name in flags}
    rest = {name: flag for name, flag in flags.items() if verdicts[name]}
    if rest and not attempt(rest)[0]:  # confirm the others really start
        raise EnvironmentMissing(f"{python} refuses XLA flags {', '.join(rest.values())} for a reason other than an unknown flag")
    return verdicts
