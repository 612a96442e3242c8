"""Candidates from a local git checkout: XLA commits (built into jaxlib through a local pin) or JAX
commits (the tree itself), first-parent. Each step checks the commit out (a git worktree under the
bisect folder), builds jaxlib with the build machinery (container, or --local bazel), installs the
wheels into the step's own folder (put first on PYTHONPATH of the test's interpreter) and runs the
test. A failed build is a skip, with its build bundle kept."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bisect.checks import SkipStep, StepEnv
from xlatools.errors import UsageError
from xlatools.records.bisect import Candidate

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.records.build import BazelProcesses


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    from xlatools.gitcmd import run_git

    done = run_git(*args, repo=repo, needed_for="bisect commits reads and checks out commits")
    if check and done.returncode != 0:
        raise UsageError(f"git {' '.join(args)} in {repo}: {done.stderr.strip() or 'failed'}")
    return done


def parse_range(text: str, option: str) -> tuple[str, str]:
    good, sep, bad = text.partition("..")
    if not sep or not good or not bad or bad.startswith("."):
        raise UsageError(
            f"{option} {text!r}: expected GOOD..BAD (two commits or refs)", hint=f"e.g. {option} abc123..def456"
        )
    return good, bad


def first_parent_commits(repo: Path, good: str, bad: str) -> list[Candidate]:
    """The commits from good to bad (both included), oldest first: key the sha, label "<short> <subject>"."""
    if not (repo / ".git").exists() and _git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UsageError(f"{repo} is not a git checkout", hint="give the root of a local clone")
    shas = {}
    for option, ref in (("good", good), ("bad", bad)):
        done = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if done.returncode != 0:
            raise UsageError(f"the {option} commit {ref!r} does not exist in {repo}", hint="check it with git log")
        shas[option] = done.stdout.strip()
    if shas["good"] == shas["bad"]:
        raise UsageError(f"good and bad are the same commit ({shas['good'][:12]})", hint="give two different commits")
    if _git(repo, "merge-base", "--is-ancestor", shas["good"], shas["bad"], check=False).returncode != 0:
        raise UsageError(
            f"the good commit {good} is not an ancestor of the bad commit {bad}",
            hint="good must be older than bad on the same history (swapped?)",
        )
    listed = _git(repo, "log", "--first-parent", "--reverse", "--format=%H %s", f"{shas['good']}..{shas['bad']}").stdout
    rows = [(shas["good"], _git(repo, "log", "-1", "--format=%s", shas["good"]).stdout.strip())]
    rows += [tuple(line.split(" ", 1)) if " " in line else (line, "") for line in listed.splitlines() if line]
    return [Candidate(key=sha, label=f"{sha[:10]} {subject[:40]}".strip()) for sha, subject in rows]


@dataclass(kw_only=True)
class CommitSource:
    repo: Path  # the checkout that holds the commits
    which: str  # "xla" or "jax"
    jax_tree: Path  # --source (for "jax": the same checkout)
    profile: str
    local: bool
    python: str
    folder: Path
    reporter: Reporter  # the builds' progress and log
    jobs: int | None = None

    @property
    def work(self) -> Path:
        # One checkout for every step, moved from commit to commit: the same bazel workspace (or
        # override path) each time, so bazel rebuilds only what changed and one server serves all.
        return self.folder / "trees" / self.which

    def prepare(self, key: str, label: str) -> StepEnv:
        t0 = time.monotonic()
        work = self.work
        if not (work / ".git").exists():
            shutil.rmtree(work, ignore_errors=True)
            _git(self.repo, "worktree", "prune", check=False)
            _git(self.repo, "worktree", "add", "--detach", "--force", str(work), key)
        _git(work, "checkout", "--quiet", "--detach", "--force", key)
        _git(work, "clean", "-fdq")  # untracked leftovers of the previous commit (ignored files stay)
        wheels, counts = self._build(key, work, t0)
        site = self.folder / "site" / key[:12]
        _install(wheels, site, self.python)
        cached = f"; {counts.cache_hits} of {counts.actions} actions from cache" if counts and counts.actions else ""
        return StepEnv(
            self.python,
            install_s=time.monotonic() - t0,
            env=(f"PYTHONPATH={site}",),
            note=f"built {', '.join(w.name for w in wheels)}{cached}",
            bazel_processes=counts,
        )

    def close(self) -> None:
        """Remove the step checkout (and, for a local JAX build, the bazel server of its workspace)."""
        if not self.work.exists():
            return
        bazel = shutil.which("bazel")
        if self.which == "jax" and self.local and bazel:
            from xlatools.proctree import run_captured

            try:
                run_captured([bazel, "shutdown"], cwd=str(self.work), timeout=120)
            except subprocess.TimeoutExpired:
                pass  # stopped with its tree; the checkout goes anyway
        _git(self.repo, "worktree", "remove", "--force", str(self.work), check=False)
        shutil.rmtree(self.work, ignore_errors=True)
        _git(self.repo, "worktree", "prune", check=False)

    def _build(self, key: str, work: Path, t0: float) -> tuple[list[Path], BazelProcesses | None]:
        """The wheels, and how bazel ran the build's actions (every step builds with the profile's
        bazel settings, so all steps share its disk and remote caches)."""
        from xlatools.builder.orchestrate import BuildRequest, prepare_build, run_build

        lock = None
        source = work
        if self.which == "xla":
            from xlatools.pin.lock import Lock, write_lock
            from xlatools.pin.resolve import record_local

            lock = self.folder / "locks" / f"{key[:12]}.lock"
            lock.parent.mkdir(parents=True, exist_ok=True)
            entry, _ = record_local("xla", work)
            write_lock(Lock(lock).with_entry(entry))
            source = self.jax_tree
        prepared = prepare_build(
            BuildRequest(
                profile=self.profile,
                source=source,
                out_root=self.folder / "builds",
                lock=lock,
                local=self.local,
                jobs=self.jobs,
            ),
            self.reporter,
        )
        outcome = run_build(prepared, self.reporter, argv=["bisect", "build", key[:12]])
        bundle = outcome.manifest.bundle
        if outcome.error is not None:
            raise SkipStep(f"build failed: {outcome.error.message}", bundle, time.monotonic() - t0)
        return [Path(bundle) / wheel.path for wheel in outcome.manifest.wheels], outcome.manifest.bazel_processes


def _install(wheels: list[Path], site: Path, python: str) -> None:
    """The built wheels into `site` (no dependencies: the test's interpreter has them)."""
    if site.exists():
        shutil.rmtree(site)
    from xlatools.bisect.envs import find_uv

    uv = find_uv()
    # The wheels' tags must suit the test's interpreter, so it is the target of the install.
    argv = (
        [uv, "pip", "install", "--quiet", "--python", python]
        if uv
        else [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    )
    from xlatools.proctree import run_captured

    try:
        done = run_captured([*argv, "--no-deps", "--target", str(site), *map(str, wheels)], timeout=900)
    except subprocess.TimeoutExpired:
        raise SkipStep(f"installing {', '.join(w.name for w in wheels)} did not finish in 900 s; stopped") from None
    if done.returncode != 0:
        raise SkipStep(f"installing {', '.join(w.name for w in wheels)} failed: {done.stderr.strip()[-400:]}")
