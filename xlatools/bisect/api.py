"""Entry points of the bisect capability (one call per command): build the test, find or make the
bisect folder and its state, list candidates (only for a new bisection: a resumed one reads them from
its state, so it needs no index or git), run the search, return the state."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

from xlatools.bisect.checks import TestOptions, build_test
from xlatools.bisect.driver import Progress, run_ordered
from xlatools.bisect.engine import ideal_steps
from xlatools.bisect.state import State, folder_for, open_state
from xlatools.errors import UsageError
from xlatools.fsutil import make_dir
from xlatools.records.bisect import BisectSpec, Candidate, CommitSpec, PassSpec, ReleaseSpec, TestSpec
from xlatools.vocab import BisectStatus, Platform

if TYPE_CHECKING:
    from xlatools.console import Reporter

NewCandidates = Callable[[], "tuple[list[Candidate], list[str]]"]  # -> (candidates, notes)


def _resume_or_new(
    out: Path, title: str, spec: BisectSpec, fresh: bool, make_candidates: NewCandidates, progress: Progress
) -> State:
    folder = folder_for(out, spec.kind, title, spec)
    state = open_state(folder, spec.kind, spec, fresh)
    if state is not None:
        done = len(state.steps)
        progress(f"continuing {folder} ({done} step{'s' if done != 1 else ''} recorded, status {state.status})")
        return state
    candidates, notes = make_candidates()
    make_dir(folder, "--out")
    state = State(folder=folder, kind=spec.kind, spec=spec, candidates=candidates, notes=notes)
    state.save()
    return state


resume_or_new = _resume_or_new  # bisect timeline's state is a bisection's


@dataclass(frozen=True)
class PlannedCandidate:
    """A candidate as `--dry-run` shows it (releases: what its environment installs)."""

    key: str
    label: str
    environment: str | None = None
    requirements: list[str] | None = None
    cached: bool | None = None


@dataclass(frozen=True)
class DryRunPlan:
    """`--dry-run`: the candidates, the test, and the steps a search without skips needs at most."""

    kind: Literal["releases", "commits", "timeline"]
    candidates: list[PlannedCandidate]
    test: TestSpec
    ideal_steps: int  # timeline: the most runs (releases x rounds)
    which: str | None = None  # commits: xla or jax
    excluded: list[str] = field(default_factory=list)  # releases: versions without a jaxlib for this Python


@dataclass(frozen=True, kw_only=True)
class ReleaseRequest:
    good: str
    bad: str
    test: TestOptions
    python_version: str = "3.11"
    nightly: bool = False
    out: Path = Path("artifacts/bisect")
    confirm: int = 0
    fresh: bool = False
    jobs: int = 1  # candidates tested at once (K-ary search); not part of the spec: any K continues the same bisection
    requirements: tuple[str, ...] = ()  # the program's own packages in every environment (--with, --requirements)

    @property
    def platform(self) -> str:
        return "gpu" if self.test.platform == Platform.GPU else "cpu"


def plan_releases(request: ReleaseRequest, reporter: Reporter) -> DryRunPlan:
    """`--dry-run`: the candidates, what each step would install, which environments are cached."""
    from xlatools.bisect.envs import envs_root, release_env
    from xlatools.bisect.releases import release_candidates

    test = build_test(request.test, reporter)
    plan = release_candidates(request.good, request.bad, request.python_version, request.nightly)
    rows = []
    for version in plan.candidates:
        env = release_env(version, request.python_version, request.platform, request.requirements)
        rows.append(
            PlannedCandidate(
                version,
                f"jax {version}",
                env.name,
                list(env.requirements),
                (envs_root() / env.name / "xlatools-env.json").exists(),
            )
        )
    return DryRunPlan("releases", rows, test.describe(), ideal_steps(len(rows)) + 2, excluded=plan.excluded)


def bisect_releases(request: ReleaseRequest, reporter: Reporter) -> State:
    from xlatools.bisect.releases import ReleaseSource, release_candidates

    progress = Progress(reporter)
    test = build_test(request.test, reporter)
    spec = ReleaseSpec(
        good=request.good,
        bad=request.bad,
        python_version=request.python_version,
        platform=request.platform,
        nightly=request.nightly,
        confirm=request.confirm,
        test=test.describe(),
        requirements=list(request.requirements) or None,
    )

    def candidates() -> tuple[list[Candidate], list[str]]:
        plan = release_candidates(request.good, request.bad, request.python_version, request.nightly)
        notes = [f"jax {v}: no jaxlib {v} for Python {request.python_version} (not a candidate)" for v in plan.excluded]
        return [Candidate(key=v, label=f"jax {v}") for v in plan.candidates], notes

    state = _resume_or_new(request.out, f"{request.good}..{request.bad}", spec, request.fresh, candidates, progress)
    for note in state.notes:
        progress(note)
    if state.status != BisectStatus.DONE:
        state.status = BisectStatus.RUNNING
        run_ordered(
            state,
            ReleaseSource(request.python_version, request.platform, progress, request.requirements),
            test,
            request.confirm,
            progress,
            request.jobs,
        )
    return state


@dataclass(frozen=True, kw_only=True)
class PassRequest:
    test: TestOptions
    python: str | None = None
    module: str | None = None
    out: Path = Path("artifacts/bisect")
    confirm: int = 0
    fresh: bool = False
    good_python: str | None = None  # --metric without --threshold: the good anchor (a good release's interpreter)


def bisect_passes(request: PassRequest, reporter: Reporter) -> State:
    from xlatools.bisect.passes import run_passes
    from xlatools.run.target import resolve_python

    progress = Progress(reporter)
    options = request.test
    if request.module and options.rule.match is not None and options.rule.match_in.startswith("dump:"):
        options = replace(options, rule=replace(options.rule, hlo_module=request.module))  # M's files only
    test = build_test(options, reporter)
    if not hasattr(test, "program"):
        raise UsageError("bisect passes runs a program test (-- prog.py); --replay is not wired here yet")
    python = resolve_python(request.python)
    good = resolve_python(request.good_python) if request.good_python else None
    spec = PassSpec(
        python=python, module=request.module, confirm=request.confirm, test=test.describe(), good_python=good
    )
    title = Path(test.program.name).stem if test.program.kind == "script" else test.program.label
    state = _resume_or_new(request.out, title, spec, request.fresh, lambda: ([], []), progress)
    if state.status != BisectStatus.DONE:
        state.status = BisectStatus.RUNNING
        run_passes(state, python, test, request.module, request.confirm, progress, good)
    return state


@dataclass(frozen=True, kw_only=True)
class CommitRequest:
    commits: str  # GOOD..BAD
    which: Literal["xla", "jax"]
    source: Path  # the JAX tree that is built
    profile: str
    test: TestOptions
    repo: Path | None = None  # the checkout holding the commits (XLA); for "jax" the source tree
    local: bool = False
    python: str | None = None
    jobs: int | None = None
    out: Path = Path("artifacts/bisect")
    confirm: int = 0
    fresh: bool = False

    def ends(self) -> tuple[str, str]:
        from xlatools.bisect.commits import parse_range

        good, bad = parse_range(self.commits, f"--{self.which}")
        if self.which == "xla" and self.repo is None:
            raise UsageError("--xla GOOD..BAD needs --xla-repo PATH (a local XLA git checkout)")
        return good, bad


def plan_commits(request: CommitRequest, reporter: Reporter) -> DryRunPlan:
    """`--dry-run`: the commits that would be candidates, and the test."""
    from xlatools.bisect.commits import first_parent_commits

    good, bad = request.ends()
    test = build_test(request.test, reporter)
    rows = [
        PlannedCandidate(c.key, c.label)
        for c in first_parent_commits(Path(request.repo or request.source).resolve(), good, bad)
    ]
    return DryRunPlan("commits", rows, test.describe(), ideal_steps(len(rows)) + 2, which=request.which)


def bisect_commits(request: CommitRequest, reporter: Reporter) -> State:
    from xlatools.bisect.commits import CommitSource, first_parent_commits
    from xlatools.run.target import resolve_python

    progress = Progress(reporter)
    good, bad = request.ends()
    repo = Path(request.repo or request.source).resolve()
    source = Path(request.source).resolve()
    if not source.is_dir():
        raise UsageError(f"--source {request.source}: no such directory", hint="give the JAX source tree to build")
    test = build_test(request.test, reporter)
    python = resolve_python(request.python)
    spec = CommitSpec(
        which=request.which,
        good=good,
        bad=bad,
        repo=str(repo),
        source=str(source),
        profile=request.profile,
        local=request.local,
        python=python,
        confirm=request.confirm,
        test=test.describe(),
    )
    state = _resume_or_new(
        request.out,
        f"{request.which}-{good[:10]}..{bad[:10]}",
        spec,
        request.fresh,
        lambda: (first_parent_commits(repo, good, bad), []),
        progress,
    )
    if state.status != BisectStatus.DONE:
        state.status = BisectStatus.RUNNING
        commit_source = CommitSource(
            repo=repo,
            which=request.which,
            jax_tree=source,
            profile=request.profile,
            local=request.local,
            python=python,
            folder=state.folder,
            reporter=reporter,
            jobs=request.jobs,
        )
        try:
            run_ordered(state, commit_source, test, request.confirm, progress)
        finally:
            commit_source.close()
    return state
