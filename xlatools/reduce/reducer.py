"""The reduction loop: the best candidate so far, recorded values, rounds, time budget, state saves.

Strategies (strategies.py) propose candidates; `try_first` keeps the first interesting one that
is smaller than the best. Smaller: fewer instructions, then fewer operations (parameters and
constants are not operations), then shorter text. After every improvement the state is saved,
so an interrupted reduction continues where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xlatools.records.reduce import ReduceEnd, Round, Verdict
from xlatools.reduce import edits
from xlatools.reduce.edits import Candidate
from xlatools.reduce.evaluate import Evaluator, OutOfTime
from xlatools.reduce.hlo_text import print_module
from xlatools.reduce.state import StateStore
from xlatools.reduce.strategies import PHASES
from xlatools.vocab import OracleKind

if TYPE_CHECKING:
    from xlatools.console import Reporter


def size(cand: Candidate) -> tuple[int, int, int]:
    module = cand.module
    operations = sum(1 for c in module.reachable() for i in c.instructions if i.opcode not in ("parameter", "constant"))
    return module.instruction_count(), operations, len(print_module(module, metadata=False))


@dataclass
class Reducer:
    evaluator: Evaluator
    best: Candidate
    best_verdict: Verdict
    store: StateStore
    reporter: Reporter
    deadline: float | None = None
    rounds: list[Round] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    values_failed: bool = False

    @property
    def batch(self) -> int:
        return self.evaluator.plan.request.jobs

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def interesting(self, cands: list[Candidate]) -> list[bool]:
        return [v.interesting is True for v in self.evaluator.evaluate(cands)]

    def try_first(self, cands: list[Candidate]) -> bool:
        """Keep the first interesting candidate (in order) that is smaller than the best."""
        current = size(self.best)
        smaller = [c for c in cands if size(c) < current]
        for start in range(0, len(smaller), self.batch):
            if self.out_of_time():
                return False
            group = smaller[start : start + self.batch]
            for cand, verdict in zip(group, self.evaluator.evaluate(group)):
                if verdict.interesting is True:
                    self.accept(cand, verdict)
                    return True
        return False

    def accept(self, cand: Candidate, verdict: Verdict) -> None:
        before = self.best.module.instruction_count()
        self.best, self.best_verdict = cand, verdict
        self.store.save_best(cand, verdict, self.evaluator)
        self.reporter.info(f"  {before} -> {cand.module.instruction_count()} instructions: {cand.note}")

    def ensure_values(self, names: list[str]) -> bool:
        """Recorded values for these entry instructions (one run of the best module exposing them all)."""
        if self.values_failed:
            return False
        entry = self.best.module.entry
        wanted = [n for n in names if (i := entry.get(n)) is not None and i.is_array and i.opcode != "parameter"]
        if all(n in self.evaluator.values.recorded for n in wanted):
            return True
        exposed = [i.name for i in entry.instructions if i.is_array and i.opcode != "parameter"]
        ok = self.store.record_values(self.evaluator, edits.reroot(self.best, exposed, "expose every value"), exposed)
        if not ok:
            self.values_failed = True
            self.reporter.warn("recorded values unavailable (the module exposing them did not run); constants only")
        return ok and all(n in self.evaluator.values.recorded for n in wanted)

    def splat(self, name: str) -> str | None:
        if not self.ensure_values([name]):
            return None
        return self.store.splats.get(name)

    def ended(self, phases: tuple[str, ...], oracle: OracleKind) -> ReduceEnd:
        """Why `run(phases)` stopped where it did, and what would take it further."""
        from xlatools.reduce.ending import explain_end

        return explain_end(
            phases,
            self.rounds,
            self.evaluator.counters,
            oracle,
            self.best,
            out_of_time=self.out_of_time(),
            max_time=self.evaluator.plan.request.max_time,
            values_failed=self.values_failed,
            skipped=self.evaluator.skipped,
        )

    def run(self, phases: tuple[str, ...]) -> None:
        """Rounds of `phases` until one changes nothing or the deadline passes: every candidate's oracle call
        then is bounded by what is left of it (evaluate.Evaluator.timeout)."""
        number = len(self.rounds)
        self.evaluator.deadline = self.deadline
        try:
            while not self.out_of_time():
                start_size = size(self.best)
                for phase in phases:
                    if self.out_of_time():
                        break
                    number += 1
                    self._phase(number, phase)
                if size(self.best) >= start_size:
                    break
        finally:
            self.evaluator.deadline = None  # the result's re-checks and pack are not cut

    def _phase(self, number: int, phase: str) -> None:
        counters = self.evaluator.counters
        record = Round(number=number, phase=phase, instructions_before=self.best.module.instruction_count())
        calls, tried, t0 = counters.oracle_calls, counters.candidates, time.monotonic()
        try:
            PHASES[phase](self)
        except OutOfTime:
            pass  # the batch the deadline cut is dropped; the round ends with the best so far
        record.instructions_after = self.best.module.instruction_count()
        record.candidates, record.oracle_calls = counters.candidates - tried, counters.oracle_calls - calls
        record.seconds = round(time.monotonic() - t0, 3)
        self.rounds.append(record)
        self.store.save_rounds(self)
        elapsed = time.monotonic() - self.started
        self.reporter.info(
            f"round {number} {phase}: {record.instructions_after} instructions left, "
            f"{counters.oracle_calls} oracle calls, {elapsed:.1f} s"
        )
