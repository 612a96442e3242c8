"""`bisect passes` run: the baseline, the candidates and what stays enabled, the search (pass_search.py)
asked through the recorded steps, the confirm re-runs, the culprits' HLO; the answer into the state."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bisect.engine import NoReduction
from xlatools.errors import UsageError
from xlatools.bisect.pass_rules import Baseline, backend_of, broke, known_needed, rejudged
from xlatools.bisect.pass_search import Answer, Found, search_passes
from xlatools.bisect.passes import (
    BASELINE,
    DUMPED,
    DisabledPassesTest,
    PassSource,
    recorded_baseline,
    check_baseline,
    culprit_hlo,
    dump_platform,
    dumped_passes,
    passes_from_dump,
)
from xlatools.records.bisect import (
    BisectAnswer,
    Candidate,
    CandidateRef,
    ConfirmRuns,
    PassFound,
    PassNote,
    PassOptions,
)
from xlatools.vocab import BisectStatus, StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.checks import ProgramTest
    from xlatools.bisect.driver import Progress
    from xlatools.bisect.engine import Oracle
    from xlatools.bisect.state import State


def label(subset: tuple[str, ...]) -> str:
    text = ",".join(subset)
    return f"disable {len(subset)}: {text if len(text) <= 60 else text[:57] + '...'}"


def left_enabled(names: list[str], backend: str, options: PassOptions) -> dict[str, str]:
    """The candidates that are never disabled, and why: the backend's needed passes (unless --include-pass
    names them) and --exclude-pass."""
    left = {n: why for n, why in known_needed(backend).items() if n in names and n not in options.include}
    left.update({n: "--exclude-pass" for n in options.exclude})
    return left


def candidate_names(found: list[PassFound], options: PassOptions) -> list[str]:
    names = [p.name for p in found]
    return names + [n for n in options.include if n not in names]


def _answer(oracle: Oracle, key: str) -> Answer:
    record = oracle.runs(key)[0]
    if broke(record):
        return Answer.BROKE
    return {StepOutcome.GOOD: Answer.GOOD, StepOutcome.BAD: Answer.BAD}.get(record.outcome, Answer.SKIP)


class PassRun:
    """One `bisect passes` search over a state (resumed or new)."""

    def __init__(self, state: State, python: str, test: ProgramTest, module: str | None, progress: Progress):
        from xlatools.bisect.driver import oracle_for

        self.state, self.module, self.progress = state, module, progress
        self.rule = test.rule
        self.source = PassSource(python)
        judged = DisabledPassesTest(test, test.rule, self.baseline)
        self.oracle = oracle_for(state, self.source, judged, progress)
        self.found: dict[str, PassFound] = {}
        self.took_over: dict[str, str] = {}  # pass -> the bundle whose dump shows it
        self._baseline: Baseline | None = None

    def baseline(self) -> Baseline:
        """The baseline's exit status and XLA error, read once it is recorded."""
        if self._baseline is None or self._baseline.code is None:
            self._baseline = recorded_baseline(self.state.steps)
        return self._baseline

    def ask(self, subset: tuple[str, ...], role: str) -> Answer:
        key = ",".join(subset)
        if role == "disable all":  # its dump tells which passes took over when it stays bad
            self.source.dump_keys.add(key)
        self.oracle.ask(key, label(subset), role)
        return _answer(self.oracle, key)

    def passes_taking_over(self, subset: tuple[str, ...]) -> list[str]:
        """The passes that changed the module in the run with `subset` disabled (one more run with a per-pass
        dump when the recorded one has none)."""
        key = ",".join(subset)
        bundle = self.oracle.runs(key)[0].bundle
        seen = dumped_passes(bundle, self.module)
        if not seen and not (bundle and (Path(bundle) / "xla_dump").is_dir()):
            self.oracle.ask(DUMPED + key, label(subset) + " (per-pass dump)", "took over")
            bundle = self.oracle.runs(DUMPED + key)[0].bundle
            seen = dumped_passes(bundle, self.module)
        for p in seen:
            if p.name not in self.found:
                self.found[p.name] = p
                self.took_over[p.name] = bundle or ""
        return [p.name for p in seen]

    def rejudge_recorded(self) -> None:
        """Steps recorded by a release that took a crash for bad are read as skips."""
        known = self.baseline()
        self.state.steps[:] = [s if s.key == BASELINE else rejudged(s, self.rule, known) for s in self.state.steps]


def run_passes(
    state: State,
    python: str,
    test: ProgramTest,
    module: str | None,
    confirm: int,
    progress: Progress,
    good_python: str | None = None,
) -> None:
    """Baseline, candidates from its dump, the search, confirm re-runs, culprit HLO; result into `state`."""
    from xlatools.bisect.driver import guarded
    from xlatools.bisect.program_anchors import start_program

    run = PassRun(state, python, test, module, progress)
    options = state.pass_options or PassOptions()

    def body() -> None:
        from xlatools.run.dumps import index_dump

        run.rejudge_recorded()
        oracle = run.oracle
        start_program(state, oracle, test, python, good_python, progress)  # a noise-aware --metric: its anchors
        outcome = oracle.ask(BASELINE, "all passes enabled", "baseline")
        base = oracle.runs(BASELINE)[0]
        dump = Path(base.bundle or "") / "xla_dump"
        if module and base.bundle and dump.is_dir() and outcome != StepOutcome.SKIP:
            index_dump(dump).find(module)  # a module the run does not have: said first, whatever the verdict
        check_baseline(outcome, base.reason)
        if not base.bundle or not dump.is_dir():
            raise UsageError(
                f"the baseline's per-pass dump {dump} is gone: the candidates are read from it",
                hint="start over with --fresh (the old folder is kept)",
            )
        index = index_dump(dump)
        passes = passes_from_dump(index, module)
        if not passes:
            raise NoReduction(
                f"the per-pass dump of {base.bundle} shows no pass that changed "
                f"{'module ' + module if module else 'any module'}"
            )
        names = candidate_names(passes, options)
        run.found = {n: PassFound(name=n) for n in names} | {p.name: p for p in passes}  # --include-pass: bare
        state.candidates = [Candidate(key=n, label=n) for n in names]
        backend = backend_of(dump_platform(index))
        left = left_enabled(names, backend, options)
        progress(f"{len(passes)} passes changed the module(s): {', '.join(p.name for p in passes)}")
        for name, why in left.items():
            progress(f"left enabled: {name} ({why})")
        try:
            found = search_passes([n for n in names if n not in left], left, run.ask, run.passes_taking_over)
        except NoReduction as exc:
            code = base.detail.exit_code if base.detail else None
            raise NoReduction(exc.message, hint=_crash_hint(code, test) or exc.hint) from None
        _finish(run, found, confirm, index, base.bundle)

    guarded(state, body)


def _crash_hint(code: int | None, test: ProgramTest) -> str | None:
    """When the baseline's bad is itself a crash, a crash of a step is a broken program unless named."""
    if code is None or not (code < 0 or code >= 128) or code in test.rule.bad_exit:
        return None
    return (
        f"the baseline itself crashed (exit {code}); steps that crash count as a broken program unless the "
        f"test names that exit: add --bad-exit {code} to look for the passes that make it crash"
    )


def _finish(run: PassRun, found: Found, confirm: int, index, base_bundle: str | None) -> None:
    from xlatools.bisect.driver import attach_diff, first_bundle
    from xlatools.bisect.state import point_link
    from xlatools.run.dumps import index_dump

    state, oracle = run.state, run.oracle
    folder = state.path.parent
    culprits = found.culprits
    key = ",".join(culprits)
    for attempt in range(1, confirm + 1):
        oracle.ask(BASELINE, "all passes enabled", "confirm", attempt)
        oracle.ask(key, label(culprits), "confirm", attempt)
    seen = ConfirmRuns(
        first_bad=[r.outcome for r in oracle.runs(BASELINE)[: confirm + 1]],
        last_good=[r.outcome for r in oracle.runs(key)[: confirm + 1]],
    )
    chosen = [run.found[name] for name in culprits if name in run.found]
    hlo = culprit_hlo(index, list(culprits), folder, run.module)
    for name in culprits:
        if name in run.took_over and run.took_over[name]:
            hlo += culprit_hlo(index_dump(Path(run.took_over[name]) / "xla_dump"), [name], folder, run.module)
    kept = [PassNote(name=n, why=w) for n, w in found.left_enabled.items()]
    added = [PassNote(name=n, why=w) for n, w in found.added.items()]
    state.result = BisectAnswer(
        last_good=CandidateRef(key=key, label=f"disable {key}", bundle=first_bundle(state, key)),
        first_bad=CandidateRef(key=BASELINE, label="all passes enabled", bundle=base_bundle),
        confirm=seen,
        flaky=any(o != StepOutcome.BAD for o in seen.first_bad) or any(o != StepOutcome.GOOD for o in seen.last_good),
        passes=chosen,
        how=found.how,
        left_enabled=kept,
        added=added,
        hlo=hlo,
        report_lines=_report(chosen, found, hlo),
    )
    state.status, state.message = BisectStatus.DONE, None
    point_link(folder, "first-bad", base_bundle)
    point_link(folder, "last-good", first_bundle(state, key))
    attach_diff(state)


def _report(chosen: list[PassFound], found: Found, hlo) -> list[str]:
    lines = [f"culprit pass{'es' if len(chosen) > 1 else ''} ({found.how}):"]
    lines += [f"  {p.name}  (pipeline {', '.join(p.pipelines)}; modules {', '.join(p.modules)})" for p in chosen]
    if len(chosen) > 1:
        lines.append(f"  disabling all {len(chosen)} together turns the test good; disabling fewer does not")
    if found.left_enabled:
        lines.append("left enabled (never disabled):")
        lines += [f"  {name}: {why}" for name, why in found.left_enabled.items()]
    if found.added:
        lines.append("candidates added during the search:")
        lines += [f"  {name}: {why}" for name, why in found.added.items()]
    if hlo:
        lines.append("HLO before and after each culprit (in the bad run; an added pass: in the run that showed it):")
    lines += [
        f"  HLO {h.module}: before {Path(h.before).name}\n        after  {Path(h.after).name}\n"
        f"        diff   {h.diff} ({h.lines_changed} lines)"
        for h in hlo
    ]
    return lines
