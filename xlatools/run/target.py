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
from xlatools.records.run import Device
from xlatools.run.flags import bad_value_from_abort, join_flags, table_verdict, unknown_from_abort
from xlatools.run.frontends import SPECS, probe_env
from xlatools.run.target_cache import TargetCache

if TYPE_CHECKING:
    from xlatools.console import Reporter

PROBES = Path(__file__).resolve().parent / "probes"


@dataclass
class Target:
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
    xla_source: str | None = None  # where its XLA comes from: the jaxlib release, TensorFlow's or torch_xla's git revision
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
        self.devices = [d if isinstance(d, Device) else Device(**{k: d.get(k) for k in ("id", "platform", "kind")})
                        for d in self.devices if isinstance(d, (Device, dict))]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Target":  # the probe's answer or the cache's copy of it (JSON at the edge)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known and v is not None})

    @property
    def has_gpu(self) -> bool:
        return any(d.platform not in ("cpu", None) for d in self.devices)

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


@dataclass
class _Answer:
    """One run of the probe script: its answer (None when it wrote none) and the process."""

    target: Target | None
    finished: bool
    proc: subprocess.CompletedProcess

    def failure(self) -> str:
        """`(exit N): last lines of its output`, as messages show a probe that failed."""
        tail = (self.proc.stderr or self.proc.stdout).strip().splitlines()[-3:]
        return f"(exit {self.proc.returncode})" + (": " + " | ".join(tail) if tail else "")


def _run_probe(python: str, args: list[str], env: dict[str, str], timeout: float) -> _Answer:
    import tempfile  # only when probing: a cached run starts its program without it

    with tempfile.TemporaryDirectory(prefix="xlatools-probe-") as tmp:
        out = os.path.join(tmp, "out.json")
        flags = env.get("XLA_FLAGS", "")
        if "--xla_dump" in flags and "--xla_dump_to" not in flags:
            # Dump flags alone send dumps to stdout, where TensorFlow 2.21's XLA segfaults with snapshots on:
            # a probe of flags must not fail for that, so the probe dumps into its own folder.
            env = {**env, "XLA_FLAGS": f"{flags} --xla_dump_to={os.path.join(tmp, 'dump')}"}
        try:
            proc = subprocess.run(
                [python, str(PROBES / "target_info.py"), out, *args],
                cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout,
            )
        except OSError as exc:
            raise UsageError(f"--python {python}: cannot run it: {exc.strerror}", hint="give the path of a Python interpreter") from None
        except subprocess.TimeoutExpired:
            raise EnvironmentMissing(f"probing {python} took longer than {timeout:.0f} s", hint="is its frontend importable there?") from None
        try:
            with open(out) as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return _Answer(None, False, proc)
        return _Answer(Target.from_json(data), bool(data.get("finished")), proc)


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


def cached_probe(python: str, platform: str = "auto", frontend: str | None = None) -> Target | None:
    """The probe's answer if it is cached (still fresh), else None; probes nothing."""
    return TargetCache.load(python).targets.get(_probe_key(platform, frontend))


def probe(python: str, platform: str = "auto", frontend: str | None = None, timeout: float = 120,
          reporter: Reporter | None = None, require: bool = True) -> Target:
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
    answer = _run_probe(python, ["--devices", "--frontend", frontend or "auto"], _probe_env(platform, frontend or "jax"), timeout)
    target = answer.target
    if target is None or (require and not answer.finished):
        raise EnvironmentMissing(f"--python {python}: the probe failed {answer.failure()}", hint="is it a Python 3 interpreter?")
    if not answer.finished:
        target.devices_error = f"starting {target.frontend} killed the probe {answer.failure()}"
    missing = _missing_frontend(target)
    if missing and require:
        spec = SPECS[target.frontend]
        raise EnvironmentMissing(f"{python} has no {missing} (frontend {spec.name})",
                                 hint=f"install {spec.install} there, pick another --python, or say --frontend")
    if not missing and target.devices_error is None:  # a failed device query may be transient (GPU busy): not cached
        # Also under the detected frontend's own key: `lower` asks for jax by name, `run` may not.
        cache.remember_target({key, _probe_key(platform, target.frontend)}, target)
    return target


def _missing_frontend(target: Target) -> str:
    """What the target lacks for its frontend ("" when nothing)."""
    spec = SPECS[target.frontend]
    if spec.name == "jax":
        return " and ".join(name for name in ("jax", "jaxlib") if not getattr(target, name))
    missing = "" if target.frontend_version else spec.label
    if spec.name == "torch-xla" and not target.versions.get("torch"):
        missing = "torch and torch_xla" if missing else "torch"
    return missing


def _flag_cache_key(target: Target, variable: str) -> str:
    return "flags" if (target.frontend, variable) == ("jax", "XLA_FLAGS") else f"flags:{target.frontend}:{variable}"


def _known_verdict(target: Target, known: dict[str, bool], variable: str, name: str) -> tuple[bool | None, str]:
    """The verdict on `name` from the table (jaxlib's XLA_FLAGS only) or the cache, if either decides."""
    if SPECS[target.frontend].uses_flag_table and variable == "XLA_FLAGS":
        verdict = table_verdict(name, target.jaxlib)
        if verdict is not None:
            return verdict, "table"
    return known.get(name), "cache"


def unknown_flags(target: Target, names_to_flags: dict[str, str], timeout: float = 120,
                  variable: str = "XLA_FLAGS", reporter: Reporter | None = None) -> tuple[list[str], dict[str, str]]:
    """The flag names `target` does not accept in `variable`, and how each verdict was reached ("table", "probe", "cache").

    The flag table covers jaxlib's XLA_FLAGS only; other frontends' flags are probed once and cached."""
    cache = TargetCache.load(target.python)
    verdicts: dict[str, bool] = {}
    how: dict[str, str] = {}
    unsure: dict[str, str] = {}
    cache_key = _flag_cache_key(target, variable)
    known = cache.flags.get(cache_key, {})
    for name, flag in names_to_flags.items():
        verdict, source = _known_verdict(target, known, variable, name)
        if verdict is not None:
            verdicts[name], how[name] = verdict, source
        else:
            unsure[name] = flag
    if unsure:
        if reporter:
            reporter.step(f"checking {variable} flag(s) {', '.join(unsure.values())} with {target.described} "
                          "(not decided by the table)")
        probed = _probe_flags(target, unsure, timeout, variable)
        for name, verdict in probed.items():
            verdicts[name], how[name] = verdict, "probe"
        if target.stamp_origin:
            cache.remember_flags(cache_key, probed, target.stamp_files)
    return sorted(name for name, ok in verdicts.items() if not ok), how


def probe_together(target: Target, by_variable: dict[str, dict[str, str]], timeout: float = 120,
                   reporter: Reporter | None = None) -> None:
    """One frontend start for the undecided flags of several variables (TensorFlow: XLA_FLAGS and
    TF_XLA_FLAGS): if it starts with all of them, each is cached as accepted. If not, nothing is
    cached and unknown_flags sorts them out variable by variable. Saves a start (seconds) per run."""
    cache = TargetCache.load(target.python)
    undecided = {}
    for variable, flags in by_variable.items():
        known = cache.flags.get(_flag_cache_key(target, variable), {})
        rest = {name: flag for name, flag in flags.items() if _known_verdict(target, known, variable, name)[0] is None}
        if rest:
            undecided[variable] = rest
    if len(undecided) < 2 or not target.stamp_origin:
        return
    listed = "; ".join(f"{variable} {', '.join(flags.values())}" for variable, flags in undecided.items())
    if reporter:
        reporter.step(f"checking {listed} with {target.described} (one start for all)")
    env = _probe_env("cpu", target.frontend, {variable: list(flags.values()) for variable, flags in undecided.items()})
    if _run_probe(target.python, ["--devices", "--frontend", target.frontend], env, timeout).proc.returncode != 0:
        return
    for variable, flags in undecided.items():
        cache.remember_flags(_flag_cache_key(target, variable), {name: True for name in flags}, target.stamp_files)


def _refuse_crashing(target: Target, flags: dict[str, str], returncode: int, crashes, variable: str) -> None:
    """The frontend died by a signal with these flags: name the flags it dies with, one start each (XLA knows
    them; the build crashes using them, e.g. TensorFlow 2.21 with --xla_dump_hlo_snapshots)."""
    import signal

    culprits = [flag for flag in flags.values() if crashes({"one": flag})] if len(flags) > 1 else list(flags.values())
    if not culprits:
        return  # only together: left to the caller's general message
    try:
        how = signal.Signals(-returncode).name
    except ValueError:
        how = f"signal {-returncode}"
    raise UsageError(f"{target.described} at {target.python} crashes ({how}) at start-up with {variable} "
                     f"{', '.join(culprits)}: XLA knows the flag, this build dies using it",
                     hint="leave it out (a preset without it, e.g. --preset dump:passes --preset dump:proto instead of "
                          "dump:full), or use another --python")


def _probe_flags(target: Target, flags: dict[str, str], timeout: float, variable: str) -> dict[str, bool]:
    """Start the frontend's XLA backend on the CPU with `flags` in `variable` and read which ones XLA refuses."""
    python = target.python

    def attempt(subset: dict[str, str]) -> tuple[bool, list[str] | None, str, int]:
        env = _probe_env("cpu", target.frontend, {variable: list(subset.values())})
        proc = _run_probe(python, ["--devices", "--frontend", target.frontend], env, timeout).proc
        if proc.returncode == 0:
            return True, [], "", 0
        return False, unknown_from_abort(proc.stderr, variable), proc.stderr, proc.returncode

    ok, unknown, stderr, returncode = attempt(flags)
    if ok:
        return {name: True for name in flags}
    refused = bad_value_from_abort(stderr)
    if unknown is None and refused is not None:
        name, value, kind = refused
        flag = flags.get(name, f"--{name}={value}")
        raise UsageError(f"XLA refuses the value of {flag}: {value!r} is not a{' ' + kind if kind else ' valid value'}"
                         f" for --{name}", hint=f"fix the value (`{variable}=--help` and starting {target.frontend} "
                         "prints the flags XLA knows, with their types)")
    if unknown is None and returncode < 0:
        _refuse_crashing(target, flags, returncode, lambda subset: attempt(subset)[3] < 0, variable)
    if unknown is None:
        lines = [line for line in stderr.strip().splitlines() if not line.startswith("\t--")]  # no flag table
        tail = " | ".join(lines[-2:])[:500]
        raise EnvironmentMissing(
            f"cannot tell whether {python} accepts {', '.join(flags.values())}: the probe failed: {tail}",
            hint=f"run it by hand: {variable}=... {python} (start {target.frontend} and compile something)",
        )
    verdicts = {name: name not in unknown for name in flags}
    rest = {name: flag for name, flag in flags.items() if verdicts[name]}
    if rest and not attempt(rest)[0]:  # confirm the others really start
        raise EnvironmentMissing(f"{python} refuses {variable} flags {', '.join(rest.values())} for a reason other than an unknown flag")
    return verdicts
