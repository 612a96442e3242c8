"""When reduction cannot proceed because the module's HLO text no longer reproduces (reduce edits HLO text; a
rewrite lost in jaxlib's HLO -> StableHLO import, as jaxlib 0.4.26's oneDNN softmax), triage says so and hands over
the smallest form that still reproduces: the module itself, as its StableHLO, when the diff stage's replay of that
file showed the mismatch against the last good release. Otherwise the reduce stage stays cannot-run."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol, TypeVar

from xlatools.errors import TextNotTheRunsModule
from xlatools.records.triage import ReduceFound, TriageState


class _Stage(Protocol):
    state: TriageState


C = TypeVar("C", bound=_Stage)


def handing_over(stage: Callable[[C], str]) -> Callable[[C], str]:
    """The reduce stage; where reduce refuses a module whose HLO text does not reproduce, the hand-over instead."""

    def run(ctx: C) -> str:
        try:
            return stage(ctx)
        except TextNotTheRunsModule as refused:
            return hand_over(ctx.state, refused)

    return run


def unless_handed_over(stage: Callable[[C], str]) -> Callable[[C], str]:
    """The isolate stage, skipped after a hand-over (skip_isolation)."""

    def run(ctx: C) -> str:
        skip_isolation(ctx.state.reduce)
        return stage(ctx)

    return run


def _replayed_from(state: TriageState, stablehlo: str) -> str | None:
    """How the diff stage's replay of `stablehlo` mismatched (None: it did not replay that file, or it agreed)."""
    from xlatools.errors import UsageError
    from xlatools.records import read_bundle
    from xlatools.records.replay import ReplayManifest
    from xlatools.replay.outcome import mismatch_figures
    from xlatools.vocab import ReplayOutcome

    found = state.diff
    if found is None or not found.replay_bundle:
        return None
    try:
        record = read_bundle(Path(found.replay_bundle), kinds=("replay",))
    except UsageError:
        return None
    assert isinstance(record, ReplayManifest)
    for module in record.modules:
        loaded = module.test.loaded_from if module.test else None
        if (
            loaded is not None
            and Path(loaded.path) == Path(stablehlo)
            and module.outcome == ReplayOutcome.MISMATCH
            and any(not c.ok for run in module.runs[1:] for c in run.comparisons)  # against a reference
        ):
            return mismatch_figures(module)
    return None


def hand_over(state: TriageState, refused: TextNotTheRunsModule) -> str:
    """The reduce stage's finding when reduce refused a module whose text does not reproduce: the module's StableHLO
    (re-raises the refusal where there is none, or where it was not seen to reproduce)."""
    runs, found = state.dumps, state.diff
    assert runs is not None and found is not None
    stablehlo = refused.stablehlo
    mismatch = _replayed_from(state, stablehlo) if stablehlo else None
    if stablehlo is None or mismatch is None:
        raise refused
    note = (
        f"not reduced: the HLO text of module {found.module_label}, which reduction edits, no longer reproduces (it "
        f"{refused.differs}); handed over the smallest form that does: the module itself, as its StableHLO "
        f"{Path(stablehlo).name} (replayed against jax {runs.last_good.version} in the diff stage: {mismatch})"
    )
    size = _instructions(runs.first_bad.bundle, found.module)
    state.reduce = ReduceFound(
        bundle=runs.first_bad.bundle,
        instructions_before=size,
        instructions_after=size,
        oracle_calls=0,
        handed_over=stablehlo,
        note=note,
    )
    return note


def _instructions(bundle: str, module: str | None) -> int:
    """The module's instruction count before optimisation, as the run's dump index says (0 when it does not)."""
    from xlatools.errors import UsageError
    from xlatools.run.dumps import index_dump, resolve_dump_dir

    try:
        index = index_dump(resolve_dump_dir(Path(bundle)))
        return index.find(module).instructions_before or 0 if module else 0
    except (UsageError, OSError):
        return 0


def skip_isolation(reduced: ReduceFound | None) -> None:
    """After a hand-over, isolation (which edits the HLO text too, which does not reproduce) has nothing to do."""
    from xlatools.errors import EXIT_OK
    from xlatools.triage.stages import StageProblem
    from xlatools.vocab import StageStatus

    if reduced is not None and reduced.handed_over:
        raise StageProblem(
            StageStatus.SKIPPED,
            "nothing to isolate: isolation edits the module's HLO text too, which no longer reproduces (see reduce: "
            "its StableHLO was handed over instead)",
            EXIT_OK,
        )
