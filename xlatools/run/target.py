"""The target interpreter: the Python that runs the program under test.

xlatools never imports jax (or TensorFlow, or torch_xla) itself; one probe script
(probes/target_info.py) runs in the target and reports its frontend, versions, plugins,
shared objects and devices, for `run`, `lower`, `replay` and `doctor` alike. Answers are
cached per interpreter (target_cache.py) and thrown away when the interpreter, the
frontend's package or jax's version file changes, so a run pays for the probe once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.run import Device, InterpreterFacts
from xlatools.run.flags import join_flags
from xlatools.run.frontends import SPECS, probe_env
from xlatools.run.target_cache import TargetCache

if TYPE_CHECKING:
    from xlatools.console import Reporter

PROBES = Path(__file__).resolve().parent / "probes"
# Seconds a probe has to write its first facts (standard library only, before any import of the frontend).
START_LIMIT = 30.0


@dataclass
class ProbedInterpreter:
    """What the probe found in an interpreter. The facts (versions, jax's accepted jaxlib range,
    plugins, shared objects) are read without starting the frontend; `devices` and `backend` come
    from starting it, and `devices_error` says why that failed."""

    python: str
    python_version: str | None = None
    machine: str | None = None
    libc: str | None = None
    jax: str | None = None
    jax_source_version: str | None = None  # `_version` in jax/version.py, read without importing jax
    jax_version_file: str | None = None
    min_jaxlib: str | None = None  # jax's `_minimum_jaxlib_version`: the oldest jaxlib this jax imports with
    jaxlib: str | None = None
    jaxlib_origin: str | None = None
    numpy: str | None = None
    plugins: list[str] = field(default_factory=list)  # GPU/TPU plugin distributions installed
    plugin_versions: dict[str, str] = field(default_factory=dict)  # the same, with their versions
    cuda_libs: dict[str, str] = field(default_factory=dict)  # nvidia-* wheels (cuDNN, NCCL, CUDA runtime)
    shared_objects: list[str] = field(default_factory=list)  # of jaxlib and the plugins
    backend: str | None = None
    devices: list[Device] = field(default_factory=list)
    devices_error: str | None = None
    frontend: str = "jax"
    frontend_version: str | None = None  # jaxlib's, tensorflow's or torch_xla's version
    frontend_origin: str | None = None
    xla_source: str | None = (
        None  # where its XLA comes from: the jaxlib release, TensorFlow's or torch_xla's git revision
    )
    versions: dict[str, str] = field(default_factory=dict)  # tensorflow, torch, torch_xla when installed

    @property
    def described(self) -> str:
        """`jaxlib 0.4.30`, `tensorflow 2.21.0`, `torch_xla 2.9.0`: how messages name the target's XLA carrier."""
        return f"{SPECS[self.frontend].label} {self.frontend_version}"

    @property
    def jaxlib_dir(self) -> str | None:
        return os.path.dirname(self.jaxlib_origin) if self.jaxlib_origin else None

    @property
    def stamp_origin(self) -> str | None:
        """The file whose change (a reinstall) makes cached answers stale."""
        return self.jaxlib_origin if self.frontend == "jax" else self.frontend_origin

    @property
    def stamp_files(self) -> list[str]:
        """Every file whose change makes the answers stale: jax reinstalled alone counts too
        (the classic way to get a jax/jaxlib pair that does not import)."""
        return [path for path in (self.stamp_origin, self.jax_version_file) if path]

    def __post_init__(self) -> None:
        # The probe reports devices as JSON objects; keep the three fields we use.
        self.devices = [
            d if isinstance(d, Device) else Device(**{k: d.get(k) for k in ("id", "platform", "kind")})
            for d in self.devices
            if isinstance(d, (Device, dict))
        ]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ProbedInterpreter":  # the probe's answer or its cached copy (JSON)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known and v is not None})

    def facts(self, *, with_python_version: bool = True) -> InterpreterFacts:
        """What manifests, replays and packs record of this interpreter (one record everywhere)."""
        return InterpreterFacts(
            python_version=self.python_version if with_python_version else None,
            jax=self.jax,
            jaxlib=self.jaxlib,
            backend=self.backend,
            devices=list(self.devices),
            plugins=list(self.plugins),
        )

    @property
    def has_gpu(self) -> bool:
        return any(d.platform not in ("cpu", None) for d in self.devices)

    def gpu_platform(self) -> str:
        return "rocm" if any("rocm" in p for p in self.plugins) else "cuda"


def resolve_python(spec: str | None) -> str:
    """Absolute path of the target interpreter, one spelling per interpreter (`one_spelling`): `.venv/bin/python`
    and `python3` found on PATH in that venv are one target, probed and cached once."""
    if not spec:
        return one_spelling(sys.executable)
    path = Path(spec).expanduser()
    if os.sep not in spec and not path.exists():
        import shutil

        found = shutil.which(spec)
        if found:
            return one_spelling(found)
    if not path.exists():
        raise UsageError(
            f"--python {spec}: no such file", hint="give the path of a Python interpreter, e.g. ~/venvs/jax/bin/python"
        )
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "python"):
            if candidate.exists():
                return os.path.abspath(candidate)
        raise UsageError(
            f"--python {spec}: a directory without bin/python", hint="give the interpreter itself or a venv directory"
        )
    if not os.access(path, os.X_OK):
        raise UsageError(f"--python {spec}: not executable", hint="give the path of a Python interpreter")
    return one_spelling(os.path.abspath(path))


def one_spelling(python: str) -> str:
    """The one path that stands for the interpreter at `python`. A venv's python, python3 and python3.X link to
    one base interpreter, which runs with that venv's packages: its `bin/python` (or `bin/python3`) when that
    leads to the same file; the link itself is kept (the file it leads to runs without the venv). Outside a
    venv, the file the links lead to (`/usr/bin/python3` -> `/usr/bin/python3.11`)."""
    path = Path(python)
    if not (path.parent.parent / "pyvenv.cfg").is_file():
        return os.path.realpath(path)
    real = os.path.realpath(path)
    for name in ("python", "python3"):
        candidate = path.parent / name
        if candidate.exists() and os.path.realpath(candidate) == real:
            return str(candidate)
    return python


@dataclass
class _Answer:
    """One run of the probe script: its answer (None when it wrote none) and the process."""

    target: ProbedInterpreter | None
    finished: bool
    proc: subprocess.CompletedProcess

    def failure(self) -> str:
        """`(exit N): last lines of its output`, as messages show a probe that failed."""
        tail = (self.proc.stderr or self.proc.stdout).strip().splitlines()[-3:]
        return f"(exit {self.proc.returncode})" + (": " + " | ".join(tail) if tail else "")


def probe_timeout(default: float) -> float:
    """The limit of one start of a target interpreter: XLATOOLS_PROBE_TIMEOUT_S when set (> 0), else `default`."""
    try:
        value = float(os.environ.get("XLATOOLS_PROBE_TIMEOUT_S", ""))
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default


def _run_probe(python: str, args: list[str], env: dict[str, str], timeout: float) -> _Answer:
    import tempfile  # only when probing: a cached run starts its program without it

    from xlatools.proctree import run_captured

    with tempfile.TemporaryDirectory(prefix="xlatools-probe-") as tmp:
        out = os.path.join(tmp, "out.json")
        flags = env.get("XLA_FLAGS", "")
        if "--xla_dump" in flags and "--xla_dump_to" not in flags:
            # Dump flags alone send dumps to stdout, where TensorFlow 2.21's XLA segfaults with snapshots on:
            # a probe of flags must not fail for that, so the probe dumps into its own folder.
            env = {**env, "XLA_FLAGS": f"{flags} --xla_dump_to={os.path.join(tmp, 'dump')}"}
        limit = probe_timeout(timeout)
        try:  # the probe writes its first facts at once (standard library only): none in START_LIMIT, it hangs
            proc = run_captured(
                [python, str(PROBES / "target_info.py"), out, *args],
                cwd=tmp,
                env=env,
                timeout=limit,
                alive=lambda: os.path.exists(out + ".alive"),
                alive_within=min(START_LIMIT, limit),
            )
        except OSError as exc:
            raise UsageError(
                f"--python {python}: cannot run it: {exc.strerror}", hint="give the path of a Python interpreter"
            ) from None
        except subprocess.TimeoutExpired as late:
            what = (
                f"took longer than {late.timeout:g} s"
                if os.path.exists(out + ".alive")
                else f"gave no sign of life in {late.timeout:g} s (it did not start)"
            )
            raise EnvironmentMissing(
                f"probing {python}: it {what}; stopped",
                hint="is it a Python interpreter, and is its frontend importable there? "
                "(XLATOOLS_PROBE_TIMEOUT_S sets the limit)",
            ) from None
        try:
            with open(out) as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return _Answer(None, False, proc)
        return _Answer(ProbedInterpreter.from_json(data), bool(data.get("finished")), proc)


def _probe_env(platform: str, frontend: str = "jax", flags: dict[str, list[str]] | None = None) -> dict[str, str]:
    """The probe's environment: the caller's, without its flag variables, plus `flags` (variable -> flags)."""
    env = dict(os.environ)
    for variable in ("XLA_FLAGS", "TF_XLA_FLAGS"):
        env.pop(variable, None)
    for variable, values in (flags or {}).items():
        env[variable] = join_flags(values)
    if platform == "cpu":
        env.update(probe_env(frontend))
    elif platform == "gpu":
        env.pop("JAX_PLATFORMS", None)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    return env


def _probe_key(platform: str, frontend: str | None) -> str:
    return f"devices:{frontend or 'auto'}:{platform}"


def cached_probe(python: str, platform: str = "auto", frontend: str | None = None) -> ProbedInterpreter | None:
    """The probe's answer if it is cached (still fresh), else None; probes nothing."""
    return TargetCache.load(python).targets.get(_probe_key(platform, frontend))


def probe(
    python: str,
    platform: str = "auto",
    frontend: str | None = None,
    timeout: float = 120,
    reporter: Reporter | None = None,
    require: bool = True,
) -> ProbedInterpreter:
    """Frontend, versions, plugins and devices of `python` (cached). `frontend` None: detected (jax first).

    `require`: the frontend must be there and start (else exit 3); without it (doctor, which
    explains what is wrong) a missing frontend or one that kills the probe while starting is
    reported in the answer (`devices_error`), and only a target that cannot run the probe at
    all is an error."""
    cache = TargetCache.load(python)
    key = _probe_key(platform, frontend)
    if key in cache.targets:
        return cache.targets[key]
    if reporter:
        reporter.step(f"probing {python} ({frontend or 'frontend'} versions, devices; cached afterwards)")
    answer = _run_probe(
        python, ["--devices", "--frontend", frontend or "auto"], _probe_env(platform, frontend or "jax"), timeout
    )
    target = answer.target
    if target is None or (require and not answer.finished):
        raise EnvironmentMissing(
            f"--python {python}: the probe failed {answer.failure()}", hint="is it a Python 3 interpreter?"
        )
    if not answer.finished:
        target.devices_error = f"starting {target.frontend} killed the probe {answer.failure()}"
    missing = _missing_frontend(target)
    if missing and require:
        spec = SPECS[target.frontend]
        raise EnvironmentMissing(
            f"{python} has no {missing} (frontend {spec.name})",
            hint=f"install {spec.install} there, pick another --python, or say --frontend",
        )
    if not missing and target.devices_error is None:  # a failed device query may be transient (GPU busy): not cached
        # Also under the detected frontend's own key: `lower` asks for jax by name, `run` may not.
        cache.remember_target({key, _probe_key(platform, target.frontend)}, target)
    return target


def _missing_frontend(target: ProbedInterpreter) -> str:
    """What the target lacks for its frontend ("" when nothing)."""
    spec = SPECS[target.frontend]
    if spec.name == "jax":
        return " and ".join(name for name in ("jax", "jaxlib") if not getattr(target, name))
    missing = "" if target.frontend_version else spec.label
    if spec.name == "torch-xla" and not target.versions.get("torch"):
        missing = "torch and torch_xla" if missing else "torch"
    return missing
