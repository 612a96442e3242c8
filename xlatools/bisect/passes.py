"""Which HLO pass makes the difference: delta debugging over `--xla_disable_hlo_passes`.

1. Baseline: the test runs once with a per-pass dump (`--xla_dump_hlo_pass_re=.*`); it must be bad.
   The passes that changed a module (per-pass dump files) are the candidates, in pipeline order.
2. Disabling all of them must turn bad into good (else the difference lies elsewhere: lowering,
   LLVM, runtime). When that disable set breaks compilation (skip), each pass is tried alone.
3. ddmin finds a 1-minimal set whose disabling turns bad into good (several passes that only fail
   together are found too). A set that breaks compilation is a skip: never good.
Result: the pass names, their pipelines, and the HLO before/after each culprit in the bad run.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bisect.checks import CANNOT_RUN, StepEnv
from xlatools.bisect.engine import EndpointProblem, NoReduction, ddmin
from xlatools.errors import EnvironmentMissing
from xlatools.records.bisect import BisectAnswer, Candidate, CandidateRef, ConfirmRuns, CulpritHlo, PassFound
from xlatools.run.dumps import DumpIndex, Module, PassStep
from xlatools.vocab import BisectStatus, StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.checks import Test
    from xlatools.bisect.driver import Progress
    from xlatools.bisect.state import State

BASELINE = "baseline"
MARKERS = ("pipeline-start", "pipeline-end")


@dataclass(frozen=True)
class PassSource:
    python: str

    def prepare(self, key: str, label: str) -> StepEnv:
        if key == BASELINE:
            return StepEnv(self.python, ("--xla_dump_hlo_pass_re=.*",), dump=True)
        return StepEnv(self.python, (f"--xla_disable_hlo_passes={key}",))


def _pass_steps(module: Module) -> list[PassStep]:
    # Steps without a `.before_<next>` part are a pass's own inner dumps (copy-insertion's), not passes.
    return [s for s in module.steps if s.pass_name not in MARKERS and s.next_pass is not None]


def passes_from_dump(index: DumpIndex, module: str | None = None) -> list[PassFound]:
    """The passes that changed a module, first seen first, with their pipelines and modules."""
    modules = [index.find(module)] if module else sorted(index.modules.values(), key=lambda m: m.id)
    found: dict[str, PassFound] = {}
    for mod in modules:
        for step in _pass_steps(mod):
            entry = found.setdefault(step.pass_name, PassFound(name=step.pass_name))
            if step.pipeline not in entry.pipelines:
                entry.pipelines.append(step.pipeline)
            if mod.name not in entry.modules:
                entry.modules.append(mod.name)
    return list(found.values())


def culprit_hlo(index: DumpIndex, culprits: list[str], folder: Path, module: str | None = None) -> list[CulpritHlo]:
    """For each culprit, per module it changed: the dump files before and after it in the bad run, and a
    unified diff of the two written to `folder`/<pass>.<module>.diff."""
    from xlatools.fsutil import atomic_write_text

    modules = [index.find(module)] if module else sorted(index.modules.values(), key=lambda m: m.id)
    found = []
    for mod in modules:
        previous = mod.before_file
        for step in mod.steps:
            if step.pass_name in culprits and step.next_pass is not None and previous:
                before, after = index.root / previous, index.root / step.file
                diff = "".join(
                    difflib.unified_diff(
                        before.read_text(errors="replace").splitlines(keepends=True),
                        after.read_text(errors="replace").splitlines(keepends=True),
                        before.name,
                        after.name,
                    )
                )
                diff_path = folder / f"{step.pass_name}.{mod.name}.diff"
                atomic_write_text(diff_path, diff)
                found.append(
                    CulpritHlo(
                        pass_=step.pass_name,
                        pipeline=step.pipeline,
                        module=mod.name,
                        before=str(before),
                        after=str(after),
                        diff=str(diff_path),
                        lines_changed=sum(1 for line in diff.splitlines() if line[:1] in "+-") - 2,
                    )
                )
            previous = step.file
    return found


def minimal_disable_set(passes: list[str], ask) -> tuple[tuple[str, ...], str]:
    """ddmin over `passes` with `ask(subset) -> outcome` (good = disabling it fixes the test).
    Returns the set and how it was found."""

    def interesting(subset: tuple[str, ...]) -> bool | None:
        outcome = ask(subset)
        return None if outcome == StepOutcome.SKIP else outcome == StepOutcome.GOOD

    everything = interesting(tuple(passes))
    if everything is True:
        return ddmin(passes, interesting), "ddmin"
    if everything is False:
        raise NoReduction(
            f"disabling all {len(passes)} passes that changed the module ({', '.join(passes)}) still leaves the "
            "test bad: the difference is not made by one of these HLO passes (look at lowering, codegen or runtime)"
        )
    for name in passes:  # disabling everything broke compilation: one at a time
        if interesting((name,)) is True:
            return (name,), "one at a time (disabling all of them broke compilation)"
    raise NoReduction(
        "disabling all the passes breaks compilation and no single pass turns the test good",
        hint="narrow the candidates with --module, or test pairs by hand with --xla-flag",
    )


def check_baseline(outcome: StepOutcome, reason: str) -> None:
    if outcome == StepOutcome.GOOD:
        raise EndpointProblem(
            f"the test is good with every pass enabled ({reason}): there is nothing to bisect",
            hint="the test must fail (bad) on the program as it is",
        )
    if outcome == StepOutcome.SKIP and reason.startswith(CANNOT_RUN):  # every step runs here: none could
        raise EnvironmentMissing(
            f"the baseline run could not be made: {reason}", hint="fix the environment (see above)"
        )
    if outcome == StepOutcome.SKIP:
        raise EndpointProblem(f"the baseline run could not be judged: {reason}", hint="check the test on its own first")


def _label(subset: tuple[str, ...]) -> str:
    text = ",".join(subset)
    return f"disable {len(subset)}: {text if len(text) <= 60 else text[:57] + '...'}"


def run_passes(state: State, python: str, test: Test, module: str | None, confirm: int, progress: Progress) -> None:
    """Baseline, candidates from its dump, ddmin, confirm re-runs, culprit HLO; result into `state`."""
    from xlatools.bisect.driver import attach_diff, first_bundle, guarded, oracle_for
    from xlatools.bisect.state import point_link
    from xlatools.run.dumps import index_dump

    oracle = oracle_for(state, PassSource(python), test, progress)

    def body() -> None:
        outcome = oracle.ask(BASELINE, "all passes enabled", "baseline")
        base = oracle.runs(BASELINE)[0]
        if module and base.bundle and outcome != StepOutcome.SKIP:  # a module the run does not have: said first
            index_dump(Path(base.bundle) / "xla_dump").find(module)
        check_baseline(outcome, base.reason)
        index = index_dump(Path(base.bundle) / "xla_dump")
        passes = passes_from_dump(index, module)
        if not passes:
            raise NoReduction(
                f"the per-pass dump of {base.bundle} shows no pass that changed "
                f"{'module ' + module if module else 'any module'}"
            )
        state.candidates = [Candidate(key=p.name, label=p.name) for p in passes]
        progress(f"{len(passes)} passes changed the module(s): {', '.join(p.name for p in passes)}")
        culprits, how = minimal_disable_set(
            [p.name for p in passes], lambda s: oracle.ask(",".join(s), _label(s), "ddmin")
        )
        key = ",".join(culprits)
        for attempt in range(1, confirm + 1):
            oracle.ask(BASELINE, "all passes enabled", "confirm", attempt)
            oracle.ask(key, _label(culprits), "confirm", attempt)
        seen = ConfirmRuns(
            first_bad=[r.outcome for r in oracle.runs(BASELINE)[: confirm + 1]],
            last_good=[r.outcome for r in oracle.runs(key)[: confirm + 1]],
        )
        chosen = [p for p in passes if p.name in culprits]
        hlo = culprit_hlo(index, list(culprits), state.folder, module)
        lines = [f"culprit pass{'es' if len(chosen) > 1 else ''} ({how}):"]
        lines += [f"  {p.name}  (pipeline {', '.join(p.pipelines)}; modules {', '.join(p.modules)})" for p in chosen]
        lines += [
            f"  HLO {h.module}: before {Path(h.before).name}\n        after  {Path(h.after).name}\n"
            f"        diff   {h.diff} ({h.lines_changed} lines)"
            for h in hlo
        ]
        state.result = BisectAnswer(
            last_good=CandidateRef(key=key, label=f"disable {key}", bundle=first_bundle(state, key)),
            first_bad=CandidateRef(key=BASELINE, label="all passes enabled", bundle=base.bundle),
            confirm=seen,
            flaky=any(o != StepOutcome.BAD for o in seen.first_bad)
            or any(o != StepOutcome.GOOD for o in seen.last_good),
            passes=chosen,
            how=how,
            hlo=hlo,
            report_lines=lines,
        )
        state.status, state.message = BisectStatus.DONE, None
        point_link(state.folder, "first-bad", base.bundle)
        point_link(state.folder, "last-good", first_bundle(state, key))
        attach_diff(state)

    guarded(state, body)
