"""`xlatools bisect flags`: which documented backend switch turns a bad program good (bisect/switches.yaml).

On one interpreter (--python): the switches for its backend and jaxlib version, each checked against the
jaxlib's own flag list as presets are (run/flag_probe.py: the table of measured flags, else one probe,
cached); the program as it is must be bad; then every switch is tried alone (`--xla-flag` added to the
run) and judged by the same test as a bisection: exit status, --match, --metric with --threshold, or a
noise-aware --metric, whose anchors are the program as it is and, with --good-python, the same program on a
good interpreter (else "good" means at least 10 % better beyond noise). The switches that make it good
are named: the user's workaround, and the maintainers' first lead. Resumable like a bisection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bisect.checks import StepEnv, TestOptions, build_test
from xlatools.bisect.driver import Progress, guarded, oracle_for
from xlatools.bisect.engine import EndpointProblem
from xlatools.bisect.metric_test import MetricTest
from xlatools.bisect.switches import Switch, by_name, load
from xlatools.errors import UsageError
from xlatools.records.bisect import Candidate, FlagsSpec
from xlatools.records.bisect_metric import FlagRow, FlagsResult
from xlatools.vocab import BisectStatus, Platform, StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.state import State
    from xlatools.console import Reporter
    from xlatools.run.target import ProbedInterpreter

BASELINE = "as-is"  # the program with no switch (the metric anchors use the same key)


class NoSwitch(UsageError):
    """No switch of the table applies to this backend and jaxlib (or its flag list accepts none)."""


@dataclass(frozen=True, kw_only=True)
class FlagsRequest:
    test: TestOptions
    python: str | None = None
    good_python: str | None = None  # a noise-aware --metric test's good anchor: the program on a good interpreter
    switches: tuple[str, ...] = ()  # --switch NAME: only these
    out: Path = Path("artifacts/bisect")
    fresh: bool = False


@dataclass(frozen=True)
class SwitchSource:
    """A step's environment: the interpreter, with the switch's flag (the baseline: none)."""

    python: str
    good_python: str | None
    table: dict[str, Switch] = field(default_factory=dict)

    def prepare(self, key: str, label: str) -> StepEnv:
        if key == BASELINE:
            return StepEnv(self.python)
        if key == "reference" and self.good_python:
            return StepEnv(self.good_python)
        return StepEnv(self.python, (self.table[key].flag,))


@dataclass(frozen=True)
class Survey:
    """Which switches are tried on this interpreter, and why the others are not."""

    target: ProbedInterpreter
    backend: str
    tried: list[Switch]
    rows: list[FlagRow]  # every switch of the table (or of --switch)


def survey(request: FlagsRequest, python: str, reporter: Reporter) -> Survey:
    from xlatools.run.flag_probe import unknown_flags
    from xlatools.run.target import probe

    test = request.test
    platform = test.platform.value if test.platform is not None else "auto"
    target = probe(python, platform, reporter=reporter)
    gpu = test.platform == Platform.GPU or (test.platform in (None, Platform.AUTO) and target.backend == "gpu")
    backend = "gpu" if gpu else "cpu"
    switches = by_name(load(), list(request.switches))
    applicable = [s for s in switches if s.applies(backend, target.jaxlib)]
    unknown, _ = (
        unknown_flags(target, {s.name: s.flag for s in applicable}, reporter=reporter) if applicable else ([], {})
    )
    rows, tried = [], []
    for s in switches:
        why = None
        if s.backend != backend:
            why = f"a {s.backend} switch ({backend} here)"
        elif s not in applicable:
            why = f"jaxlib {target.jaxlib} is outside {s.jaxlib}, where the path is on by default"
        elif s.name in unknown:
            why = f"not in jaxlib {target.jaxlib}'s flag list"
        else:
            tried.append(s)
        rows.append(FlagRow(name=s.name, flag=s.flag, what=s.what, tried=why is None, why=why))
    return Survey(target, backend, tried, rows)


def run_flags(request: FlagsRequest, reporter: Reporter) -> State:
    from xlatools.bisect.api import resume_or_new
    from xlatools.run.target import resolve_python

    progress = Progress(reporter)
    test = build_test(request.test, reporter)
    if not hasattr(test, "program"):
        raise UsageError("bisect flags runs a program (-- prog.py): a repro pack cannot take extra XLA flags")
    if request.good_python and not isinstance(test, MetricTest):
        raise UsageError("--good-python is the good anchor of --metric without --threshold", hint="leave it out")
    python = resolve_python(request.python)
    good_python = resolve_python(request.good_python) if request.good_python else None
    found = survey(request, python, reporter)
    if not found.tried:
        raise NoSwitch(
            f"no switch of the table applies to jaxlib {found.target.jaxlib} on {found.backend}",
            hint="; ".join(f"{r.name}: {r.why}" for r in found.rows)[:600],
        )
    spec = FlagsSpec(
        python=python,
        backend=found.backend,
        switches=[s.name for s in found.tried],
        good_python=good_python,
        test=test.describe(),
    )
    title = Path(test.program.name).stem if test.program.kind == "script" else test.program.label
    candidates = [Candidate(key=s.name, label=s.flag) for s in found.tried]
    state = resume_or_new(request.out, title, spec, request.fresh, lambda: (candidates, []), progress, test)
    source = SwitchSource(python, good_python, {s.name: s for s in found.tried})
    oracle = oracle_for(state, source, test, progress)

    def body() -> None:
        state.status = BisectStatus.RUNNING
        baseline = _baseline(state, oracle, source, test, progress)
        rows = {r.name: r for r in found.rows}
        for switch in found.tried:
            outcome = oracle.ask(switch.name, switch.flag, "switch")
            record = oracle.runs(switch.name)[0]
            row = rows[switch.name]
            row.outcome, row.reason, row.bundle = outcome, record.reason, record.bundle
        recovers = [s.name for s in found.tried if rows[s.name].outcome == StepOutcome.GOOD]
        state.flags = FlagsResult(
            jaxlib=found.target.jaxlib, backend=found.backend, baseline=baseline, rows=found.rows, recovers=recovers
        )
        state.status, state.message = BisectStatus.DONE, None

    guarded(state, body)
    return state


def _baseline(state: State, oracle, source: SwitchSource, test, progress: Progress) -> str:
    """The program as it is must be bad (the metric's anchors measured first): its reason; else EndpointProblem."""
    if isinstance(test, MetricTest):
        from xlatools.bisect.program_anchors import anchor_program

        good = StepEnv(source.good_python) if source.good_python else None
        anchor_program(state, oracle, test, StepEnv(source.python), good, progress)
        return oracle.runs(BASELINE)[0].reason
    outcome = oracle.ask(BASELINE, "the program as it is", "baseline")
    reason = oracle.runs(BASELINE)[0].reason
    if outcome != StepOutcome.BAD:
        raise EndpointProblem(
            f"the program as it is is {outcome} ({reason}): there is nothing for a switch to recover",
            hint="the test must fail (bad) without any switch",
        )
    return reason


def table_lines(state: State) -> list[str]:
    result = state.flags
    if result is None:
        return []
    lines = [f"jaxlib {result.jaxlib} ({result.backend}); the program as it is: bad ({result.baseline})"]
    for row in result.rows:
        if not row.tried:
            lines.append(f"  {row.name:<24} not tried: {row.why}")
            continue
        verdict = {"good": "RECOVERS", "bad": "no", "skip": "cannot tell"}.get(str(row.outcome), str(row.outcome))
        lines.append(f"  {row.name:<24} {verdict:<11} {row.flag}  ({row.reason})")
    if result.recovers:
        flag = next(r.flag for r in result.rows if r.name == result.recovers[0])
        lines.append(
            f"recovers: {', '.join(result.recovers)}; workaround: XLA_FLAGS='{flag}' (or xlatools run --xla-flag={flag})"
        )
    else:
        lines.append("no switch of the table recovers it: try `xlatools bisect passes` for one HLO pass")
    return lines
