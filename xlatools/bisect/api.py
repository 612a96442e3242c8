"""Entry points of the bisect capability (one call per command): build the test, find or make the
bisect folder and its state, list candidates (only for a new bisection: a resumed one reads them from
its state, so it needs no index or git), run the search, return the state."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlatools.bisect.checks import TestOptions, build_test
from xlatools.bisect.driver import progress, run_ordered
from xlatools.bisect.engine import ideal_steps
from xlatools.bisect.state import State, folder_for, open_state
from xlatools.errors import UsageError
from xlatools.fsutil import make_dir


def _spec(kind: str, test, **fields: Any) -> dict[str, Any]:
    import json

    from xlatools.redact import redact

    # Through JSON, so that it compares equal to the spec read back from a state file (tuples -> lists);
    # redacted, as the state file keeps it (the folder name hashes it: no secret in that either).
    return redact(json.loads(json.dumps({"kind": kind, **fields, "test": test.describe()}, default=str)))


def _resume_or_new(out: Path, kind: str, title: str, spec: dict[str, Any], fresh: bool, make_candidates) -> State:
    folder = folder_for(out, kind, title, spec)
    state = open_state(folder, kind, spec, fresh)
    if state is not None:
        done = len(state.steps)
        progress(f"continuing {folder} ({done} step{'s' if done != 1 else ''} recorded, status {state.status})")
        return state
    candidates, notes = make_candidates()
    make_dir(folder, "--out")
    state = State(folder, kind, spec, candidates, notes=notes)
    state.save()
    return state


@dataclass(frozen=True)
class ReleaseRequest:
    good: str
    bad: str
    test: TestOptions
    python_version: str = "3.11"
    nightly: bool = False
    out: Path = Path("artifacts/bisect")
    confirm: int = 0
    fresh: bool = False


def plan_releases(request: ReleaseRequest) -> dict[str, Any]:
    """`--dry-run`: the candidates, what each step would install, which environments are cached."""
    from xlatools.bisect.envs import envs_root, release_env
    from xlatools.bisect.releases import release_candidates

    test = build_test(request.test)
    platform = "gpu" if request.test.platform == "gpu" else "cpu"
    plan = release_candidates(request.good, request.bad, request.python_version, request.nightly)
    rows = []
    for version in plan.candidates:
        env = release_env(version, request.python_version, platform)
        rows.append({"key": version, "label": f"jax {version}", "environment": env.name,
                     "requirements": list(env.requirements), "cached": (envs_root() / env.name / "xlatools-env.json").exists()})
    return {"kind": "releases", "candidates": rows, "excluded": plan.excluded, "test": test.describe(),
            "ideal_steps": ideal_steps(len(rows)) + 2}


def bisect_releases(request: ReleaseRequest) -> State:
    from xlatools.bisect.releases import ReleaseSource, release_candidates

    test = build_test(request.test)
    platform = "gpu" if request.test.platform == "gpu" else "cpu"
    spec = _spec("releases", test, good=request.good, bad=request.bad, python_version=request.python_version,
                 platform=platform, nightly=request.nightly, confirm=request.confirm)

    def candidates():
        plan = release_candidates(request.good, request.bad, request.python_version, request.nightly)
        notes = [f"jax {v}: no jaxlib {v} for Python {request.python_version} (not a candidate)" for v in plan.excluded]
        return [{"key": v, "label": f"jax {v}"} for v in plan.candidates], notes

    state = _resume_or_new(request.out, "releases", f"{request.good}..{request.bad}", spec, request.fresh, candidates)
    for note in state.notes:
        progress(note)
    if state.status != "done":
        state.status = "running"
        run_ordered(state, ReleaseSource(request.python_version, platform, progress), test, request.confirm)
    return state


@dataclass(frozen=True)
class PassRequest:
    test: TestOptions
    python: str | None = None
    module: str | None = None
    out: Path = Path("artifacts/bisect")
    confirm: int = 0
    fresh: bool = False


def bisect_passes(request: PassRequest) -> State:
    from xlatools.bisect.passes import run_passes
    from xlatools.run.target import resolve_python

    test = build_test(request.test)
    if not hasattr(test, "program"):
        raise UsageError("bisect passes runs a program test (-- prog.py); --replay is not wired here yet")
    python = resolve_python(request.python)
    spec = _spec("passes", test, python=python, module=request.module, confirm=request.confirm)
    title = Path(test.program.name).stem if test.program.kind == "script" else test.program.label
    state = _resume_or_new(request.out, "passes", title, spec, request.fresh, lambda: ([], []))
    if state.status != "done":
        state.status = "running"
        run_passes(state, python, test, request.module, request.confirm)
    return state


@dataclass(frozen=True)
class CommitRequest:
    commits: str  # GOOD..BAD
    which: str  # "xla" or "jax"
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


def plan_commits(request: CommitRequest) -> dict[str, Any]:
    """`--dry-run`: the commits that would be candidates, and the test."""
    from xlatools.bisect.commits import first_parent_commits, parse_range

    good, bad = parse_range(request.commits, f"--{request.which}")
    if request.which == "xla" and request.repo is None:
        raise UsageError("--xla GOOD..BAD needs --xla-repo PATH (a local XLA git checkout)")
    test = build_test(request.test)
    rows = first_parent_commits(Path(request.repo or request.source).resolve(), good, bad)
    return {"kind": "commits", "which": request.which, "candidates": rows, "test": test.describe(),
            "ideal_steps": ideal_steps(len(rows)) + 2}


def bisect_commits(request: CommitRequest) -> State:
    from xlatools.bisect.commits import CommitSource, first_parent_commits, parse_range
    from xlatools.run.target import resolve_python

    good, bad = parse_range(request.commits, f"--{request.which}")
    if request.which == "xla" and request.repo is None:
        raise UsageError("--xla GOOD..BAD needs --xla-repo PATH (a local XLA git checkout)")
    repo = Path(request.repo or request.source).resolve()
    source = Path(request.source).resolve()
    if not source.is_dir():
        raise UsageError(f"--source {request.source}: no such directory", hint="give the JAX source tree to build")
    test = build_test(request.test)
    python = resolve_python(request.python)
    spec = _spec("commits", test, which=request.which, good=good, bad=bad, repo=str(repo), source=str(source),
                 profile=request.profile, local=request.local, python=python, confirm=request.confirm)
    state = _resume_or_new(request.out, "commits", f"{request.which}-{good[:10]}..{bad[:10]}", spec, request.fresh,
                           lambda: (first_parent_commits(repo, good, bad), []))
    if state.status != "done":
        state.status = "running"
        commit_source = CommitSource(repo, request.which, source, request.profile, request.local, python, state.folder,
                                     request.jobs)
        try:
            run_ordered(state, commit_source, test, request.confirm)
        finally:
            commit_source.close()
    return state
