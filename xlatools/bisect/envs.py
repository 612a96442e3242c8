"""Cached Python environments, one per (jax release, Python version, platform), reused across bisections.

    <cache root>/envs/<name>/            a virtual environment made by uv (pip when uv is absent)
    <cache root>/envs/<name>/xlatools-env.json   written last: an environment without it is unfinished
    <cache root>/envs/.<name>.lock       held while the environment is made (two bisections, one install)

uv because it installs a cached jax+jaxlib pair in about 2 s where pip takes 20-30 s; uv and pip
each read their own index configuration (uv.toml / UV_* and pip.conf / PIP_*), never a host of ours.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from xlatools.bundle import utc_now
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.fsutil import atomic_write_json, cache_root, read_cache_json

MARKER = "xlatools-env.json"


@dataclass(frozen=True)
class EnvSpec:
    name: str
    python_version: str
    requirements: tuple[str, ...]


class InstallFailed(Exception):
    def __init__(self, reason: str, seconds: float):
        super().__init__(reason)
        self.reason, self.seconds = reason, seconds


def _release(version: str):
    from packaging.version import Version

    return Version(version).release


def release_requirements(version: str, platform: str = "cpu") -> tuple[str, ...]:
    """What to install for jax release `version` (pure). jaxlib is pinned to the same version (jax's rule
    since 0.4.32, and within the accepted range before); 0.4.x pairs predate NumPy 2, and their
    jax.export needs flatbuffers and absl-py, which later releases pull in themselves."""
    reqs = [f"jax=={version}", f"jaxlib=={version}"]
    if _release(version) < (0, 4, 31):
        reqs.append("numpy<2")
    if _release(version) < (0, 5):
        reqs += ["flatbuffers", "absl-py"]
    if platform == "gpu":
        if _release(version) < (0, 4, 32):
            raise UsageError(
                f"--platform gpu: jax {version} predates the separate CUDA plugin wheels (0.4.32)",
                hint="bisect GPU behaviour from jax 0.4.32 on",
            )
        reqs += [f"jax-cuda12-plugin=={version}", f"jax-cuda12-pjrt=={version}"]
    return tuple(reqs)


def release_env(version: str, python_version: str, platform: str = "cpu", extras: tuple[str, ...] = ()) -> EnvSpec:
    """The environment of jax `version`; `extras` (the program's own packages, --with / --requirements) are resolved
    with it (uv picks the newest version of each that accepts this jax unless pinned) and name an environment of
    their own."""
    name = f"jax-{version}-py{python_version}-{platform}"
    if extras:
        import hashlib

        name += "-with-" + hashlib.sha256("\n".join(sorted(extras)).encode()).hexdigest()[:10]
    return EnvSpec(name, python_version, (*release_requirements(version, platform), *extras))


def envs_root() -> Path:
    return cache_root() / "envs"


def env_python(path: Path) -> Path:
    return path / "bin" / "python"


def ensure(spec: EnvSpec, log=None) -> tuple[Path, float, bool]:
    """The environment's python, the seconds spent making it (0 when cached) and whether it was made now."""
    root = envs_root()
    root.mkdir(parents=True, exist_ok=True)
    path = root / spec.name
    with open(root / f".{spec.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = path / MARKER
        if marker.exists() and env_python(path).exists():
            _touch(marker)
            return env_python(path), 0.0, False
        if path.exists():
            shutil.rmtree(path)  # unfinished: a killed install
        t0 = time.monotonic()
        try:
            tool = _make(spec, path, log)
        except BaseException as exc:
            shutil.rmtree(path, ignore_errors=True)
            if isinstance(exc, subprocess.CalledProcessError):
                raise InstallFailed(_tail(exc.stderr or exc.stdout or str(exc)), time.monotonic() - t0) from None
            raise
        seconds = time.monotonic() - t0
        atomic_write_json(
            marker,
            {
                "name": spec.name,
                "python_version": spec.python_version,
                "requirements": list(spec.requirements),
                "tool": tool,
                "created": utc_now(),
                "last_used": utc_now(),
                "install_s": round(seconds, 3),
            },
        )
        return env_python(path), seconds, True


def find_uv() -> str | None:
    """uv on PATH, else beside this interpreter (`pip install uv` into xlatools' own venv)."""
    beside = Path(sys.executable).parent / "uv"
    return shutil.which("uv") or (str(beside) if beside.exists() else None)


INSTALL_TIMEOUT_S = 1800  # one venv or install step (jax + jaxlib over a slow index); then it is stopped, tree and all


def _run(argv: list[str]) -> None:
    """One install step with a timeout; a failure or a timeout is a CalledProcessError (an InstallFailed above)."""
    from xlatools.proctree import run_captured

    try:
        done = run_captured(argv, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise subprocess.CalledProcessError(
            -9, argv, "", f"{argv[0]}: did not finish in {INSTALL_TIMEOUT_S} s; stopped"
        ) from None
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)


NO_UV = (
    "uv not found: pip makes each environment, about 1-1.5 min apiece (uv: a few seconds); `pip install uv` "
    f"(here: `{sys.executable} -m pip install uv`), or uv on PATH, makes the next ones fast"
)
_SAID_NO_UV: list[bool] = []


def _make(spec: EnvSpec, path: Path, log) -> str:
    uv = find_uv()
    run = _run
    if uv:
        if log:
            log(f"uv: making {spec.name}: {' '.join(spec.requirements)}")
        run([uv, "venv", "--quiet", "--python", find_python(spec.python_version) or spec.python_version, str(path)])
        run([uv, "pip", "install", "--quiet", "--python", str(env_python(path)), *spec.requirements])
        return "uv"
    base = _base_python(spec.python_version)
    if log:
        if not _SAID_NO_UV:  # once per command: it is the same advice for every environment
            _SAID_NO_UV.append(True)
            log(NO_UV)
        log(f"pip: making {spec.name}: {' '.join(spec.requirements)}")
    run([base, "-m", "venv", str(path)])
    run([str(env_python(path)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *spec.requirements])
    return "pip"


def find_python(version: str) -> str | None:
    """An interpreter of `version` on this machine: this one, a pyenv build (pyenv's shims may be
    disabled), or python<version> on PATH that runs. None: let uv find (or fetch) one."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    builds = sorted(
        pyenv.glob(f"{version}.*/bin/python{version}"),
        key=lambda p: [int(x) if x.isdigit() else -1 for x in p.parts[-3].split(".")],
    )
    if builds:
        return str(builds[-1])
    found = shutil.which(f"python{version}")
    if found:
        from xlatools.proctree import run_captured

        try:
            if run_captured([found, "-c", "pass"], timeout=60).returncode == 0:
                return found
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def check_python_available(version: str) -> None:
    """Refuse, before anything is made, a Python version that is neither on this machine nor one uv knows
    how to get (`uv python list` names installed interpreters and downloadable builds alike)."""
    if find_python(version):
        return
    uv = find_uv()
    if uv is None:
        return  # pip's path: _base_python says what is missing when an environment is made
    try:
        listed = subprocess.run(
            [uv, "python", "list", version], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return  # uv could not say: the environment's own making will
    if listed.returncode == 0 and not listed.stdout.strip():
        raise UsageError(
            f"--python-version {version}: no such Python here, and uv knows no build of it",
            hint="pick a CPython that jax publishes wheels for, e.g. --python-version 3.11",
        )


def _base_python(version: str) -> str:
    found = find_python(version)
    if not found:
        raise EnvironmentMissing(
            f"no python{version} on PATH and no uv to fetch one",
            hint="install uv (it finds or downloads interpreters) or that Python",
        )
    return found


def _tail(text: str, lines: int = 6) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-800:] or "install failed"


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def _touch(marker: Path) -> None:
    data = read_cache_json(marker)
    if data:
        try:
            atomic_write_json(marker, {**data, "last_used": utc_now()})
        except OSError:
            pass


@dataclass(frozen=True)
class EnvInfo:
    name: str
    path: str
    complete: bool
    bytes: int
    created: str | None
    last_used: str | None
    requirements: tuple[str, ...]


def list_envs() -> list[EnvInfo]:
    root = envs_root()
    found = []
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        if not path.is_dir() or path.name.startswith("."):
            continue
        data = read_cache_json(path / MARKER)  # {} when missing or damaged (then the environment is unfinished)
        requirements = data.get("requirements")
        found.append(
            EnvInfo(
                path.name,
                str(path),
                bool(data),
                _size(path),
                _text(data.get("created")),
                _text(data.get("last_used")),
                tuple(map(str, requirements)) if isinstance(requirements, list) else (),
            )
        )
    return found


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def prune(names: list[str], everything: bool, unfinished_only: bool, dry_run: bool) -> list[EnvInfo]:
    """Remove the named environments (or all, or the unfinished ones); returns what was (or would be) removed."""
    known = {e.name: e for e in list_envs()}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"no cached environment {', '.join(unknown)}", hint="`xlatools cache list` shows them")
    if everything:
        chosen = list(known.values())
    elif unfinished_only:
        chosen = [e for e in known.values() if not e.complete]
    else:
        chosen = [known[n] for n in names]
    if not dry_run:
        for env in chosen:
            with open(envs_root() / f".{env.name}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                shutil.rmtree(env.path, ignore_errors=True)
    return chosen
