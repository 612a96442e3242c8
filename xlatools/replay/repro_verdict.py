"""What a repro pack's replay answers: its expected modules (what `repro pack` recorded) against the modules
a replay gave here: reproduced, not reproduced (with what differs), cannot run, or nothing to reproduce."""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from pathlib import Path

from xlatools.errors import EXIT_FAILED, EXIT_MISSING, EXIT_NOTHING_TO_REPRODUCE, EXIT_OK
from xlatools.records.replay import InputSource, ModuleRecord, PackModule
from xlatools.replay.outcome import describe_inputs, judged_against, missing_kernel, tool_failure
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
    """What a pack records of one replayed module: its outcome and what it was judged against, on which inputs."""
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
        against=judged_against(module),
        input_source=module.input_source,
    )


def evidence_of(module: PackModule) -> list[str]:
    """What a module's outcome rests on (`PackModule.against`); for a pack older than it, what its `failed_run`
    says: a mismatch of the test run was against the snapshot, else against the run named."""
    if module.against is not None:
        return list(module.against)
    if module.outcome in (ReplayOutcome.MISMATCH, ReplayOutcome.PRECISION):
        return ["snapshot"] if module.failed_run in (None, "test") else [module.failed_run]
    return [module.failed_run] if module.failed_run else []


def describe(module: PackModule, names: dict[str, str] | None = None) -> str:
    """`mismatch against reference-python-1 (jaxlib 0.6.1)`, `crash SIGABRT in test`, `ok`: an outcome with
    what it was judged against (`names`: a label's longer name, e.g. its jaxlib)."""
    shown = ", ".join((names or {}).get(label, label) for label in evidence_of(module))
    if module.outcome in (ReplayOutcome.MISMATCH, ReplayOutcome.PRECISION):
        return f"{module.outcome} against {shown or 'nothing'}"
    if module.outcome == ReplayOutcome.OK or not shown:
        return str(module.outcome)
    signal = f" {module.signal}" if module.outcome == ReplayOutcome.CRASH and module.signal else ""
    return f"{module.outcome}{signal} in {shown}"


def same_evidence(e: PackModule, got: PackModule, names: dict[str, str] | None = None) -> bool:
    """Like with like: a mismatch against the same comparisons (a reference is never stood in for by the snapshot,
    nor the other way round), a crash of the same run by the same signal, a failure of the same run. `names`: the
    pack's reference labels with their jaxlib (`reference_names`)."""
    if got.outcome != e.outcome:
        return False
    if e.outcome in (ReplayOutcome.MISMATCH, ReplayOutcome.PRECISION):
        return _same_labels(evidence_of(e), evidence_of(got), names or {})
    if e.outcome == ReplayOutcome.OK:
        return True
    if e.outcome == ReplayOutcome.CRASH and e.signal and got.signal != e.signal:
        return False
    return _same_labels([e.failed_run or "test"], [got.failed_run or "test"], names or {})


def _same_labels(expected: list[str], got: list[str], names: dict[str, str]) -> bool:
    """The same comparisons, a reference interpreter named by its jaxlib whatever its label (`reference-python-1`
    in packs made before references were named by their jax version, `reference-jax-0.6.1` since); where a
    reference's jaxlib is not known, any reference interpreter (which one is pack_index's check of the jaxlibs)."""
    fine = [sorted(map(lambda label: _reference_jaxlib(label, names) or label, side)) for side in (expected, got)]
    if any(_is_reference(x) and not _reference_jaxlib(x, names) for x in (*expected, *got)):
        fine = [sorted("reference" if _is_reference(x) else x for x in side) for side in (expected, got)]
    return fine[0] == fine[1]


def _is_reference(label: str) -> bool:
    return label.startswith(("reference-python-", "reference-jax-"))


def _reference_jaxlib(label: str, names: dict[str, str]) -> str | None:
    """`jaxlib 0.6.1` for `reference-jax-0.6.1` (or its second, `reference-jax-0.6.1-2`) and for a pack's
    `reference-python-1` recorded with jaxlib 0.6.1; None when the label does not say."""
    if label.startswith("reference-jax-"):
        return "jaxlib " + re.sub(r"-\d+$", "", label.removeprefix("reference-jax-"))
    found = re.search(r"\(jaxlib ([^)]+)\)", names.get(label, "")) if label.startswith("reference-python-") else None
    return f"jaxlib {found[1]}" if found else None


def _inputs(source: InputSource | None) -> tuple[str, int | None] | None:
    """What makes two input sources the same inputs: the kind and seed (paths differ between machines; arguments
    `recorded` by a run travel in a pack as its snapshot)."""
    if source is None:
        return None
    return ("snapshot" if source.kind == "recorded" else source.kind), source.seed


def _compare_module(
    e: PackModule, g: ModuleRecord | None, match: PackMatch, names: dict[str, str], referenced: bool
) -> tuple[bool, list[str], str | None]:
    """(same under `match`, differences, why it cannot run here or None). `referenced`: the pack compares with a
    reference interpreter (a snapshot then never judges)."""
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
    if e.against is None and referenced and e.outcome == ReplayOutcome.MISMATCH and evidence_of(e) == ["snapshot"]:
        return (
            False,
            [],
            (
                f"{label}: the pack expects a mismatch against the snapshot, which the run under suspicion computed, "
                "though it compares with a reference (a pack made before outcomes recorded what they were judged "
                "against): make the pack again with this xlatools"
            ),
        )
    if e.input_source and _inputs(g.input_source) != _inputs(e.input_source):
        return (
            False,
            [],
            (
                f"{label}: replayed on other inputs ({describe_inputs(g.input_source)}) than its expected outcome was "
                f"judged on ({describe_inputs(e.input_source)})"
            ),
        )
    diffs, same = [], True
    if not same_evidence(e, got, names):
        diffs.append(f"{label}: {describe(got, names)}, expected {describe(e, names)}")
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


NO_FAILURE_FIX = (
    "; to make a pack that can answer, pack the bundle again with --reference-python PY (an interpreter whose jaxlib "
    "computes it right: the pack then expects the mismatch against it) or --reference cpu (a GPU run against the CPU)"
)


def nothing_to_reproduce(expected: list[PackModule], oracle: str | None = None, referenced: bool = False) -> str | None:
    """Why a pack has nothing to reproduce (every module it records ran ok: no mismatch, no error), or None.
    `oracle`: the reduction's verdict the pack records, which its replay could not show; `referenced`: the pack
    compares with a reference (its modules matched it)."""
    if expected and all(m.outcome in (ReplayOutcome.OK, ReplayOutcome.PRECISION) for m in expected):
        if oracle:
            why = f"; the reduction that made it judged by {oracle}, which a pack cannot replay"
        elif referenced:
            why = "; they matched the reference(s) the pack compares with"
        else:
            why = NO_FAILURE_FIX
        return (
            f"the pack records no failure: its {len(expected)} module(s) ran ok when it was made "
            f"({', '.join(m.label for m in expected)[:300]}){why}"
        )
    return None


def healthy_answer(
    expected: list[PackModule], result: ReproResult, oracle: str | None = None, referenced: bool = False
) -> ReproResult:
    """A pack that records no failure answers nothing-to-reproduce whatever the replay here gave (what it gave
    is said, and its differences listed); cannot-run stays cannot-run."""
    healthy = nothing_to_reproduce(expected, oracle, referenced)
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


def verdict(
    expected: list[PackModule],
    got: list[ModuleRecord],
    match: PackMatch = PackMatch.CLASS,
    names: dict[str, str] | None = None,
    referenced: bool = False,
) -> ReproResult:
    """Pure: the pack's expected modules against a replay's modules. `names`: how to show a comparison's label
    (a reference's jaxlib); `referenced`: the pack compares with a reference interpreter."""
    by_key = {(m.id, m.name): m for m in got}
    differences, cannot, differing = [], [], 0
    pairs = []
    for e in expected:
        replayed = by_key.get((e.id, e.name))
        same, diffs, why = _compare_module(e, replayed, match, names or {}, referenced)
        differences += diffs
        differing += not same
        if why:
            cannot.append(why)
        pairs.append(ModulePair(expected=e, got=expected_of(replayed) if replayed else None))
    if cannot:
        return ReproResult(
            outcome=ReproOutcome.CANNOT_RUN, reason="; ".join(cannot), differences=differences, modules=pairs
        )
    compared = f"compared: {match}; " + ", ".join(f"{e.label} {describe(e, names)}" for e in expected)[:600]
    if not differing:
        return ReproResult(
            outcome=ReproOutcome.REPRODUCED,
            differences=differences,
            modules=pairs,
            reason=f"every module gave its expected outcome, judged as it was recorded ({compared})",
        )
    # The differences are listed once, beside the answer; the reason counts them.
    return ReproResult(
        outcome=ReproOutcome.NOT_REPRODUCED,
        differences=differences,
        modules=pairs,
        reason=f"{differing} of {len(expected)} module(s) did not give their expected outcome ({compared})",
    )
