"""`bisect passes --dry-run`: the candidates, what stays enabled, and the plan, without running anything.

The candidates come from the baseline's per-pass dump, so a dry run lists them only when this bisection
(the same command) has recorded its baseline; before that it says where they will come from and shows
the backend's table of passes left enabled."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bisect.pass_rules import NEEDED_PASSES, backend_of, known_needed
from xlatools.bisect.passes import BASELINE, DISABLE, dump_platform
from xlatools.records.bisect import PassNote, PassOptions, PassSpec, TestSpec
from xlatools.vocab import Platform

if TYPE_CHECKING:
    from xlatools.bisect.checks import ProgramTest


@dataclass(frozen=True, kw_only=True)
class PassPlan:
    kind: str = "passes"
    folder: str
    recorded_steps: int  # steps of this bisection already recorded (a resumed search reuses them)
    status: str | None  # of the recorded bisection; None: none yet
    test_changed: list[str] = field(default_factory=list)  # what changed since it was recorded: it starts fresh
    backend: str  # whose table of needed passes applies: cpu or gpu
    candidates: list[str] | None  # None: the baseline has not run yet
    left_enabled: list[PassNote] = field(default_factory=list)
    pool: list[str] | None = None  # the candidates the search disables
    exclude: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # the plan, in words
    test: TestSpec


def _plan_steps(spec: PassSpec, recorded: bool, fresh: bool) -> list[str]:
    confirm = spec.confirm
    return [
        ("baseline (recorded: reused)" if recorded and not fresh else "baseline")
        + ": the test with every pass enabled and a per-pass dump (--xla_dump_hlo_pass_re=.*); it must be bad, "
        "and the passes that changed "
        + (f"module {spec.module}" if spec.module else "a module")
        + " are the candidates",
        f"disable every candidate not left enabled ({DISABLE}...): good goes on to the search",
        "if that breaks the program (a crash, a failure that is not the test's bad): a binary search over "
        "prefixes finds the pass it needs, which stays enabled and is named; then again",
        "if it stays bad: passes that changed the module in that run (they took over) join the candidates; "
        "with none, the difference is not made by these passes (exit 1)",
        "prefix search over the good set: a 1-minimal set of passes whose disabling turns the test good "
        "(about log2(N) + 1 steps per pass of the answer)",
        f"confirm: the baseline and the answer run {confirm} more time{'s' if confirm != 1 else ''}"
        if confirm
        else "no confirm re-runs (--confirm N adds them)",
    ]


def plan(folder: Path, spec: PassSpec, test: ProgramTest, options: PassOptions, fresh: bool) -> PassPlan:
    from xlatools.bisect.pass_run import candidate_names, left_enabled
    from xlatools.bisect.passes import passes_from_dump
    from xlatools.bisect.state import load

    from xlatools.bisect.testfiles import changes, files_of_test

    state = None if fresh else load(folder)
    changed = changes(state.test_files, files_of_test(test), state.updated) if state and state.test_files else []
    if changed:  # the run would set it aside and start fresh (api._resume_or_new)
        state = None
    base = next((s for s in state.steps if s.key == BASELINE and s.attempt == 0), None) if state else None
    backend = "gpu" if test.opts.platform == Platform.GPU else "cpu"
    candidates = None
    dump = Path(base.bundle) / "xla_dump" if base is not None and base.bundle else None
    if dump is not None and dump.is_dir():
        from xlatools.run.dumps import index_dump

        index = index_dump(dump)
        backend = backend_of(dump_platform(index))
        candidates = candidate_names(passes_from_dump(index, spec.module), options)
    if candidates is None:
        names = sorted(set(NEEDED_PASSES.get(backend, {})) - set(options.include))
        left = {n: known_needed(backend)[n] for n in names} | {n: "--exclude-pass" for n in options.exclude}
        pool = None
    else:
        left = left_enabled(candidates, backend, options)
        pool = [n for n in candidates if n not in left]
    return PassPlan(
        folder=str(folder),
        recorded_steps=len(state.steps) if state else 0,
        status=str(state.status) if state else None,
        test_changed=changed,
        backend=backend,
        candidates=candidates,
        left_enabled=[PassNote(name=n, why=w) for n, w in left.items()],
        pool=pool,
        exclude=list(options.exclude),
        include=list(options.include),
        steps=_plan_steps(spec, base is not None, fresh),
        test=spec.test,
    )
