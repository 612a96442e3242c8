"""A triage whose modules differ from the last good release only by precision: the diff stage says so (no module
miscompiles), reduce and isolate have nothing to do, and ISSUE.md says it is not a miscompile."""

from __future__ import annotations

from pathlib import Path

from xlatools.records.base import read_record
from xlatools.records.replay import ModuleRecord
from xlatools.records.triage import TriageState
from xlatools.triage.report import render
from xlatools.replay.outcome import precision_only
from xlatools.vocab import ReplayOutcome as O

TRIAGE = Path(__file__).resolve().parent.parent / "fixtures" / "reduce-triage" / "triage.json"


def _modules(*outcomes: O) -> list[ModuleRecord]:
    return [ModuleRecord(name=f"jit_{i}", id=i, outcome=outcome) for i, outcome in enumerate(outcomes, 1)]


def test_precision_only_when_nothing_else_differs():
    assert precision_only(_modules(O.OK, O.PRECISION, O.PRECISION)) == ["0002 jit_2", "0003 jit_3"]
    assert precision_only(_modules(O.OK, O.OK)) == []  # nothing differs: no finding either
    # a crash, or a module xlatools could not replay, is not covered by a precision finding
    assert precision_only(_modules(O.PRECISION, O.CRASH)) == []
    assert precision_only(_modules(O.PRECISION, O.CANNOT_RUN)) == []
    assert precision_only(_modules(O.PRECISION, O.MISMATCH)) == []


def test_the_issue_says_not_a_miscompile_and_names_the_platform():
    state = read_record(TRIAGE, TriageState, "triage state")
    right = render(state, "check.py", ["xlatools", "triage"], None).splitlines()[0]
    assert right == "# jaxlib 0.6.2 (CPU, pass constant_folding): a wrong result in `check.py` (jaxlib 0.6.1 is right)"
    state.spec.platform, state.reduce, state.isolate, state.passes = "gpu", None, None, None
    state.diff.module = state.diff.module_name = state.diff.module_label = state.diff.mismatch = None
    state.diff.modules[0].outcome, state.diff.precision_only = "precision", ["0001 jit__lambda_"]
    text = render(state, "check.py", ["xlatools", "triage"], None)
    assert text.splitlines()[0] == (
        "# jaxlib 0.6.2 (GPU): a precision difference, not a miscompile, in `check.py` "
        "(jaxlib 0.6.1 agrees at full precision)"
    )
    assert "- **Not a miscompile**: 0001 jit__lambda_ differ from the last good release only by precision" in text
