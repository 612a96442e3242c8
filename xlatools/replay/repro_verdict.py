"""What a repro pack's replay answers: its expected modules (what `repro pack` recorded) against the modules
a replay gave here: reproduced, not reproduced (with what differs), cannot run, or nothing to reproduce."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlatools.errors import EXIT_FAILED, EXIT_MISSING, EXIT_NOTHING_TO_REPRODUCE, EXIT_OK
from xlatools.records.replay import ModuleRecord, PackModule
from xlatools.replay.outcome import missing_kernel, tool_failure
from xlatools.vocab import PackMatch, ReplayOutcome, ReproOutcome

EXIT_CODES = {
    ReproOutcome.REPRODUCED: EXIT_FAILED,
    ReproOutcome.NOT_REPRODUCED: EXIT_OK,
    ReproOutcome.CANNOT_RUN: EXIT_MISSING,
    ReproOutcome.NOTHING_TO_REPRODUCE: EXIT_NOTHING_TO_REPRODUCE,
}


@dataclass(kw_only=True)
class ModulePair:
    expected: PackModule
    got: PackModule | None  # None: the module was not replayed


@dataclass(kw_only=True)
class ReproResult:
    """The answer of `repro run` (and of `bisect --replay PACK`: reproduced = bad, cannot-run = skip)."""

    outcome: ReproOutcome
    reason: str
    differences: list[str] = field(default_factory=list)
    bundle: str | None = None
    modules: list[ModulePair] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]


def expected_of(module: ModuleRecord) -> PackModule:
    """What a pack records of one replayed module."""
    test = module.test
    return PackModule(
        name=module.name,
        id=module.id,
        outcome=module.outcome,
        failed_run=module.failed_run,
        phase=test.phase if test else None,
        signal=test.signal if test else None,
        fingerprint=module.fingerprint,
        outputs=[o.sha256 for o in module.outputs],
    )


def _compare_module(e: PackModule, g: ModuleRecord | None, match: PackMatch) -> tuple[bool, list[str], str | None]:
    """(same under `match`, differences, why it cannot run here or None)."""
    label = e.label
    if g is None:
        return False, [], f"{label}: was not replayed"
    got = expected_of(g)
    why = tool_failure(g)
    if why:  # never a verdict: xlatools could not do its part here
        return False, [], f"{label}: {why}"
    kernel = missing_kernel(g)
    if kernel and e.outcome != ReplayOutcome.COMPILE_ERROR:
        return (
            False,
            [],
            (
                f"{label}: this jaxlib has no custom-call target {kernel}, which the module calls (a kernel "
                "of the jaxlib that made it)"
            ),
        )
    diffs, same = [], True
    if got.outcome != e.outcome:
        diffs.append(f"{label}: outcome {got.outcome}, expected {e.outcome}")
        same = False
    if e.fingerprint and got.fingerprint != e.fingerprint and _unsorted_fingerprint(g) != e.fingerprint:
        diffs.append(f"{label}: fingerprint {str(got.fingerprint)[:12]}, expected {e.fingerprint[:12]}")
        same = same and match != PackMatch.FINGERPRINT
    if e.outputs and got.outputs != e.outputs:
        diffs.append(f"{label}: output digests differ ({len(got.outputs)} outputs, expected {len(e.outputs)})")
        same = same and match != PackMatch.OUTPUTS
    return same, diffs, None


def _unsorted_fingerprint(module: ModuleRecord) -> str | None:
    """The test run's fingerprint as xlatools computed it before backend_config JSON was sorted: a pack made then
    recorded that one (the same compile, the same kernels)."""
    from xlatools.run.hlo_canon import fingerprint

    test = module.test
    try:
        return (
            fingerprint((Path(test.dir) / "optimized.txt").read_text(), sorted_json=False)
            if test and test.dir
            else None
        )
    except (OSError, UnicodeDecodeError):
        return None


def nothing_to_reproduce(expected: list[PackModule], oracle: str | None = None) -> str | None:
    """Why a pack has nothing to reproduce (every module it records ran ok: no mismatch, no error), or None.
    `oracle`: the reduction's verdict the pack records, which its replay could not show."""
    if expected and all(m.outcome in (ReplayOutcome.OK, ReplayOutcome.PRECISION) for m in expected):
        why = (
            f"; the reduction that made it judged by {oracle}, which a pack cannot replay"
            if oracle
            else "; a pack of a failing run, of a mismatch against --reference cpu, or of a reduction has something "
            "to reproduce"
        )
        return (
            f"the pack records no failure: its {len(expected)} module(s) ran ok when it was made "
            f"({', '.join(m.label for m in expected)[:300]}){why}"
        )
    return None


def healthy_answer(expected: list[PackModule], result: ReproResult, oracle: str | None = None) -> ReproResult:
    """A pack that records no failure answers nothing-to-reproduce whatever the replay here gave (what it gave
    is said, and its differences listed); cannot-run stays cannot-run."""
    healthy = nothing_to_reproduce(expected, oracle)
    if not healthy or result.outcome == ReproOutcome.CANNOT_RUN:
        return result
    here = "the same outcome" if not result.differences else f"{len(result.differences)} difference(s), listed below"
    return ReproResult(
        outcome=ReproOutcome.NOTHING_TO_REPRODUCE,
        reason=f"{healthy}; replayed here: {here}",
        differences=result.differences,
        bundle=result.bundle,
        modules=result.modules,
    )


def verdict(expected: list[PackModule], got: list[ModuleRecord], match: PackMatch = PackMatch.CLASS) -> ReproResult:
    """Pure: the pack's expected modules against a replay's modules."""
    by_key = {(m.id, m.name): m for m in got}
    differences, cannot, differing = [], [], 0
    pairs = []
    for e in expected:
        replayed = by_key.get((e.id, e.name))
        same, diffs, why = _compare_module(e, replayed, match)
        differences += diffs
        differing += not same
        if why:
            cannot.append(why)
        pairs.append(ModulePair(expected=e, got=expected_of(replayed) if replayed else None))
    if cannot:
        return ReproResult(
            outcome=ReproOutcome.CANNOT_RUN, reason="; ".join(cannot), differences=differences, modules=pairs
        )
    if not differing:
        return ReproResult(
            outcome=ReproOutcome.REPRODUCED,
            differences=differences,
            modules=pairs,
            reason=f"every module gave its expected outcome (compared: {match})",
        )
    # The differences are listed once, beside the answer; the reason counts them.
    return ReproResult(
        outcome=ReproOutcome.NOT_REPRODUCED,
        differences=differences,
        modules=pairs,
        reason=f"{differing} of {len(expected)} module(s) did not give their expected outcome (compared: {match})",
    )
