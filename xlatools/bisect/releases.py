"""Candidates from jax releases: the versions between --good and --bad that have a jaxlib of the same
version for the chosen Python, as the package index this machine is configured with lists them
(pip's own configuration: `pip index versions`), each tested in a cached environment (envs.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable

from xlatools.bisect.checks import SkipStep, StepEnv
from xlatools.bisect.envs import InstallFailed, ensure, release_env
from xlatools.errors import EnvironmentMissing, UsageError


def index_versions(package: str, python_version: str, pre: bool = False) -> list[str]:
    """Versions of `package` with a wheel for `python_version` on this platform, newest first."""
    argv = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        package,
        "--python-version",
        python_version,
        "--only-binary=:all:",
        "--disable-pip-version-check",
    ]
    if pre:
        argv.append("--pre")
    try:
        from xlatools.proctree import run_captured

        done = run_captured(argv, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentMissing(f"cannot ask the package index for {package} versions: {exc}") from None
    found = re.search(r"^Available versions:\s*(.+)$", done.stdout, re.M)
    if done.returncode != 0 or not found:
        if "No module named pip" in done.stderr:
            raise EnvironmentMissing(
                f"{sys.executable} has no pip to list {package} releases", hint=f"{sys.executable} -m ensurepip"
            )
        if "No matching distribution" in done.stderr:
            return []
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise EnvironmentMissing(
            f"the package index did not list {package} versions: {tail or 'no answer'}",
            hint="check the index configuration (pip config list) and the network",
        )
    return [v.strip() for v in found.group(1).split(",") if v.strip()]


@dataclass
class ReleasePlan:
    candidates: list[str]  # oldest first; the good end first, the bad end last
    excluded: list[str] = field(default_factory=list)  # between the ends, without a jaxlib for this Python


def plan_release_candidates(
    good: str, bad: str, jax_versions: list[str], jaxlib_versions: list[str], python_version: str, nightly: bool = False
) -> ReleasePlan:
    """Pure: check the ends and list the candidates between them."""
    from packaging.version import Version

    g, b = check_ends(good, bad)
    jax_set = {Version(v): v for v in jax_versions}
    jaxlib_set = {Version(v) for v in jaxlib_versions}
    for option, version in (("--good", g), ("--bad", b)):
        if version not in jax_set:
            raise UsageError(
                f"{option} {version}: no such jax release on the configured package index",
                hint=_nearby(version, sorted(jax_set)),
            )
        if version not in jaxlib_set:
            raise UsageError(
                f"{option} {version}: no jaxlib {version} for Python {python_version} on this platform",
                hint=f"jaxlib releases for Python {python_version}: {_span(sorted(jaxlib_set))}; "
                "or choose another --python-version",
            )
    between = sorted(v for v in jax_set if g <= v <= b and (nightly or not v.is_prerelease))
    candidates = [jax_set[v] for v in between if v in jaxlib_set]
    excluded = [jax_set[v] for v in between if v not in jaxlib_set]
    return ReleasePlan(candidates, excluded)


def check_ends(good: str, bad: str):
    """The two ends as Versions; same or swapped ends are refused before the index is asked."""
    from packaging.version import InvalidVersion, Version

    for option, value in (("--good", good), ("--bad", bad)):
        if value != value.strip() or len(value) > 64:  # the ends name folders: no spaces around, no 5,000 digits
            raise UsageError(
                f"{option} {value[:70]!r}: not a release version as the index spells one",
                hint="e.g. --good 0.4.28 --bad 0.4.31",
            )
        try:
            Version(value)
        except InvalidVersion:
            raise UsageError(f"{option} {value!r} is not a version", hint="e.g. --good 0.4.28 --bad 0.4.31") from None
    g, b = Version(good), Version(bad)
    if g == b:
        raise UsageError(f"--good and --bad are the same version ({good})", hint="give two different releases")
    if g > b:
        raise UsageError(
            f"--good {good} is newer than --bad {bad}",
            hint="bisection looks for the first bad release after a good one; to find where something "
            f"was fixed, invert the test (fail while the old behaviour is still there) and use --good {bad} --bad {good}",
        )
    return g, b


def _nearby(version, known) -> str:
    older = [v for v in known if v < version][-2:]
    newer = [v for v in known if v > version][:2]
    return "nearby releases: " + ", ".join(str(v) for v in older + newer) if known else "the index lists no jax release"


def _span(versions) -> str:
    return f"{versions[0]} ... {versions[-1]} ({len(versions)})" if versions else "none"


def check_python_version(python_version: str) -> None:
    """3.MINOR, the form pip and uv take: anything else would only come back as "no such release"."""
    found = re.fullmatch(r"3\.(\d{1,2})", python_version)
    if not found or int(found.group(1)) < 7:
        raise UsageError(
            f"--python-version {python_version}: expected 3.MINOR with MINOR 7 or more, e.g. 3.11",
            hint="jax and jaxlib publish wheels for CPython 3 only",
        )


def release_candidates(good: str, bad: str, python_version: str, nightly: bool = False) -> ReleasePlan:
    check_python_version(python_version)
    check_ends(good, bad)
    jax_versions = index_versions("jax", python_version, pre=nightly)
    jaxlib_versions = index_versions("jaxlib", python_version, pre=nightly)
    if nightly:
        from packaging.version import Version

        if not any(Version(v).is_prerelease for v in jaxlib_versions):
            raise EnvironmentMissing(
                "--nightly: the configured package index lists no jax/jaxlib nightlies (pre-release versions)",
                hint="nightly wheels live on a separate index; add it to pip's configuration (extra-index-url) "
                "and to uv's (UV_EXTRA_INDEX_URL), then run again",
            )
    return plan_release_candidates(good, bad, jax_versions, jaxlib_versions, python_version, nightly)


@dataclass
class ReleaseSource:
    """Installs (or reuses) one environment per release."""

    python_version: str
    platform: str = "cpu"
    log: Callable[[str], None] | None = None  # progress lines while an environment is made
    extras: tuple[str, ...] = ()  # the program's own packages (--with / --requirements)

    def prepare(self, key: str, label: str) -> StepEnv:
        spec = release_env(key, self.python_version, self.platform, self.extras)
        try:
            python, seconds, made = ensure(spec, self.log)
        except InstallFailed as exc:
            what = f" with {' '.join(self.extras)}" if self.extras else ""
            raise SkipStep(f"install failed{what}: {exc.reason}", install_s=exc.seconds) from None
        return StepEnv(str(python), install_s=seconds, note="installed" if made else "cached environment")
