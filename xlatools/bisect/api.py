"""Entry points of the bisect capability (one call per command): build the test, find or make the
bisect folder and its state, list candidates (only for a new bisection: a resumed one reads them from
its state, so it needs no index or git), run the search, return the state."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

from xlatools.bisect.checks import ProgramTest, ReplayTest, TestOptions, build_test
from xlatools.bisect.driver import Progress, run_ordered
from xlatools.bisect.engine import ideal_steps
from xlatools.bisect.metric_test import MetricTest
from xlatools.bisect.state import State, folder_for, open_state, set_aside
from xlatools.errors import UsageError
from xlatools.fsutil import make_dir
from xlatools.records.bisect import BisectSpec, Candidate, CommitSpec, PassOptions, PassSpec, ReleaseSpec, TestSpec
from xlatools.vocab import BisectStatus, Platform

if TYPE_CHECKING:
    from xlatools.console import Reporter

NewCandidates = Callable[[], "tuple[list[Candidate], list[str]]"]  # -> (candidates, notes)


def _resume_or_new(
    out: Path,
    title: str,
    spec: BisectSpec,
    fresh: bool,
    make_candidates: NewCandidates,
    progress: Progress,
    test: ProgramTest | ReplayTest | MetricTest,
) -> State:
    """The recorded bisection of this spec, or a new one. A recorded one whose test files changed since
    (bisect/testfiles.py) is set aside and a fresh one starts: its verdicts were about another test."""
    from xlatools.bisect.testfiles import changes, files_of_test

    folder = folder_for(out, spec.kind, title, spec)
    files = files_of_test(test)
    state = open_state(folder, spec.kind, spec, fresh)
    if state is not None and state.test_files is not None:
        changed = changes(state.test_files, files, state.updated)
        if changed:
            kept = set_aside(folder)
            done = len(state.steps)
            progress.reporter.warn(
                f"the test changed since {folder.name} was recorded ({'; '.join(changed)}): its {done} "
                f"recorded step{'s' if done != 1 else ''} judged the test as it was, so a fresh bisection "
                f"starts (the old one is kept as {kept})"
            )
            state = None
    if state is not None:
        if state.test_files is None:  # recorded by a release that did not keep them: from now on
            state.test_files = files
            state.save()
        done = len(state.steps)
        progress(f"continuing {folder} ({done} step{'s' if done != 1 else ''} recorded, status {state.status})")
        return state
    candidates, notes = make_candidates()
    make_dir(folder, "--out")
    state = State(folder=folder, kind=spec.kind, spec=spec, candidates=candidates, notes=notes, test_files=files)
    state.save()
    return state


resume_or_new = _resume_or_new  # bisect timeline's and bisect flags' states are a bisection's


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

    state = _resume_or_new(
        request.out, f"{request.good}..{request.bad}", spec, request.fresh, candidates, progress, test
    )
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
    exclude: tuple[str, ...] = ()  # --exclude-pass: never disabled
    include: tuple[str, ...] = ()  # --include-pass: a candidate even if the dump or the backend's table says not

    def options(self) -> PassOptions:
        from xlatools.bisect.passes import check_pass_names

        check_pass_names("--exclude-pass", list(self.exclude))
        check_pass_names("--include-pass", list(self.include))
        both = sorted(set(self.exclude) & set(self.include))
        if both:
            raise UsageError(f"{both[0]} is given to both --exclude-pass and --include-pass", hint="give it once")
        return PassOptions(exclude=list(dict.fromkeys(self.exclude)), include=list(dict.fromkeys(self.include)))


def _pass_test(request: PassRequest, reporter: Reporter) -> tuple[ProgramTest, str, PassSpec]:
    """The program test of `bisect passes` (a dump match looks in --module's files only), its interpreter, the spec."""
    from xlatools.run.target import resolve_python

    options = request.test
    if request.module and options.rule.match is not None and options.rule.match_in.startswith("dump:"):
        options = replace(options, rule=replace(options.rule, hlo_module=request.module))  # M's files only
    test = build_test(options, reporter)
    if not isinstance(test, (ProgramTest, MetricTest)):
        raise UsageError("bisect passes runs a program test (-- prog.py); --replay is not wired here yet")
    python = resolve_python(request.python)
    good = resolve_python(request.good_python) if request.good_python else None
    spec = PassSpec(
        python=python, module=request.module, confirm=request.confirm, test=test.describe(), good_python=good
    )
    return test, python, spec  # type: ignore[return-value]  # a MetricTest runs its ProgramTest


def _pass_title(test: ProgramTest) -> str:
    return Path(test.program.name).stem if test.program.kind == "script" else test.program.label


def plan_passes(request: PassRequest, reporter: Reporter):
    """`--dry-run`: the candidates (those of a recorded baseline; else what the baseline will list them from),
    what stays enabled and the plan. Runs, writes and moves nothing."""
    from xlatools.bisect.pass_plan import plan

    options = request.options()
    test, python, spec = _pass_test(request, reporter)
    folder = folder_for(request.out, spec.kind, _pass_title(test), spec)
    return plan(folder, spec, test, options, request.fresh)


def bisect_passes(request: PassRequest, reporter: Reporter) -> State:
    from xlatools.bisect.pass_run import run_passes

    progress = Progress(reporter)
    options = request.options()
    test, python, spec = _pass_test(request, reporter)
    state = _resume_or_new(request.out, _pass_title(test), spec, request.fresh, lambda: ([], []), progress, test)
    if (state.pass_options or PassOptions()) != options:
        if state.steps:
            progress(
                f"--exclude-pass/--include-pass differ from the recorded search's: searching again, reusing the "
                f"{len(state.steps)} recorded steps wherever the search asks for them"
            )
        state.pass_options = options
        state.status = BisectStatus.RUNNING if state.status == BisectStatus.DONE else state.status
        state.save()
    if state.status != BisectStatus.DONE:
        state.status = BisectStatus.RUNNING
        run_passes(state, python, test, request.module, request.confirm, progress, spec.good_python)
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
        test,
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
