"""The one way xlatools runs git: one "git is missing" error, one timeout policy, never a prompt.

Every git command runs through `proctree.run_captured` (its own session: on a timeout, Ctrl-C or
SIGTERM git and whatever it started, an ssh or a credential helper, stop with it) with
GIT_TERMINAL_PROMPT=0 (a CI job never waits on a password). The timeout is GIT_TIMEOUT_S for every
git command (a `worktree add` of a large checkout and an `ls-remote` over a slow network both fit),
XLATOOLS_GIT_TIMEOUT to change it; a git that outlives it is the environment's fault (exit 3).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from xlatools.errors import EnvironmentMissing, UsageError

GIT_TIMEOUT_S = 300.0


def timeout_s() -> float:
    value = os.environ.get("XLATOOLS_GIT_TIMEOUT", "")
    try:
        return float(value) if value and float(value) > 0 else GIT_TIMEOUT_S
    except ValueError:
        raise UsageError(
            f"XLATOOLS_GIT_TIMEOUT={value!r}: not a number of seconds",
            hint="unset it (default 300) or give seconds, e.g. XLATOOLS_GIT_TIMEOUT=600",
        ) from None


def have_git() -> bool:
    return shutil.which("git") is not None


def git_executable(needed_for: str = "") -> str:
    """The git on PATH, else the one "git is missing" error (exit 3), saying what needed it."""
    git = shutil.which("git")
    if git is None:
        why = f" ({needed_for})" if needed_for else ""
        raise EnvironmentMissing(
            f"git is not installed{why}", hint="install git (e.g. apt-get install git) and run again"
        )
    return git


def run_git(
    *args: str, repo: Path | str | None = None, needed_for: str = "", timeout_hint: str | None = None
) -> subprocess.CompletedProcess:
    """`git [-C repo] ARGS` with captured text output; the caller reads its return code. A git that
    does not finish in time is stopped with its whole tree and raises EnvironmentMissing."""
    from xlatools.proctree import run_captured

    argv = [git_executable(needed_for), *(["-C", str(repo)] if repo is not None else []), *args]
    limit = timeout_s()
    try:
        return run_captured(argv, timeout=limit, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except subprocess.TimeoutExpired:
        where = f" in {repo}" if repo is not None else ""
        raise EnvironmentMissing(
            f"git {' '.join(args[:2])}{where} did not finish in {limit:g} s; stopped",
            hint=timeout_hint or "check the repository and the network, or set XLATOOLS_GIT_TIMEOUT to wait longer",
        ) from None
