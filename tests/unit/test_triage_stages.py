"""triage's stage engine with plain callables: order, needs, skips, resume, a stage that cannot run, Ctrl-C."""

from __future__ import annotations

import pytest

from xlatools.console import Reporter
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.triage import StageRecord
from xlatools.triage.stages import ORDER, Action, StageProblem, exit_code, plan_stages, run_stages
from xlatools.vocab import StageStatus, TriageStage as S


class Book:
    """What the engine sees of a triage: stage records, findings, bases; runners that log their calls."""

    def __init__(self):
        self.records: dict[S, StageRecord] = {}
        self.findings: set[S] = set()
        self.bases: dict[S, str] = {}
        self.calls: list[S] = []
        self.saves = 0
        self.behaviour: dict[S, object] = {}  # stage -> an exception to raise, or "no-finding"

    def record(self, stage: S) -> StageRecord:
        return self.records.setdefault(stage, StageRecord(stage=stage))

    def runner(self, stage: S):
        def run() -> str:
            self.calls.append(stage)
            self.findings.discard(stage)
            what = self.behaviour.get(stage)
            if isinstance(what, StageProblem):
                self.findings.add(stage)  # a flaky answer is still an answer
            if isinstance(what, BaseException):
                raise what
            if what != "no-finding":
                self.findings.add(stage)
            return f"{stage} found it"

        return run

    def run(self, skip=frozenset()):
        self.calls = []
        run_stages(
            self.record,
            {s: self.runner(s) for s in ORDER},
            frozenset(skip),
            lambda s: self.bases.get(s, ""),
            lambda s: s in self.findings,
            self._save,
            lambda: "now",
            Reporter.silent(),
        )
        return [self.records[s].status for s in ORDER]

    def _save(self):
        self.saves += 1


def test_every_stage_runs_in_order_and_the_triage_is_done():
    book = Book()
    assert book.run() == [StageStatus.DONE] * len(ORDER)
    assert book.calls == list(ORDER) and book.saves == len(ORDER)
    assert book.records[S.DIFF].reason == "diff found it" and exit_code(list(book.records.values())) == 0


def test_a_stage_that_cannot_run_blocks_only_what_needs_it_and_the_rest_still_report():
    book = Book()
    book.behaviour[S.DUMPS] = EnvironmentMissing("no jax 0.6.1 here", hint="install it")
    statuses = dict(zip(ORDER, book.run()))
    assert statuses[S.DUMPS] == StageStatus.CANNOT_RUN and book.records[S.DUMPS].exit_code == 3
    assert book.records[S.DUMPS].reason == "no jax 0.6.1 here (install it)"
    assert statuses[S.DIFF] == statuses[S.REDUCE] == statuses[S.ISOLATE] == StageStatus.BLOCKED
    assert book.records[S.DIFF].reason == "needs what the dumps stage finds (dumps: cannot-run)"
    assert "diff: blocked" in book.records[S.REDUCE].reason
    assert statuses[S.PASSES] == statuses[S.REPORT] == StageStatus.DONE  # independent of the dumps
    assert book.calls == [S.RELEASES, S.DUMPS, S.PASSES, S.REPORT]
    assert exit_code(list(book.records.values())) == 3


def test_the_same_command_keeps_what_is_done_and_retries_the_rest():
    book = Book()
    book.behaviour[S.DIFF] = UsageError("no module mismatches")  # a stage's bad input: exit 2, the rest go on
    book.run()
    assert exit_code([book.records[s] for s in ORDER]) == 2
    del book.behaviour[S.DIFF]
    assert book.run() == [StageStatus.DONE] * len(ORDER)
    assert book.calls == [S.DIFF, S.REDUCE, S.ISOLATE, S.REPORT]  # done ones kept; the report is always written


def test_a_kept_stage_runs_again_when_what_it_was_computed_from_changed():
    book = Book()
    book.run()
    book.bases[S.DUMPS] = "0.6.1..0.6.2"  # e.g. the release bisection found other ends
    book.run()
    assert book.calls == [S.DUMPS, S.REPORT]


def test_skip_leaves_a_stage_alone_and_its_earlier_finding_still_counts():
    book = Book()
    assert dict(zip(ORDER, book.run(skip={S.RELEASES, S.DIFF})))[S.REDUCE] == StageStatus.BLOCKED
    assert book.records[S.RELEASES].status == StageStatus.SKIPPED and S.RELEASES not in book.calls
    assert exit_code(list(book.records.values())) == 3  # reduce and isolate were blocked
    book.run()  # diff runs now; reduce and isolate follow
    assert book.calls == [S.RELEASES, S.DIFF, S.REDUCE, S.ISOLATE, S.REPORT]
    book.run(skip={S.DIFF})  # done before: skipping it now keeps its finding and status
    assert book.records[S.DIFF].status == StageStatus.DONE and book.calls == [S.REPORT]


def test_a_stage_that_finds_nothing_to_work_on_leaves_its_dependents_nothing_to_do():
    book = Book()
    book.run()  # a module mismatched: reduce and isolate found something
    book.behaviour[S.DIFF] = "no-finding"  # the dumps changed; now every module differs only by precision
    book.bases[S.DIFF] = "other dumps"
    book.run()
    assert book.records[S.DIFF].status == StageStatus.DONE and S.REDUCE not in book.calls
    assert book.records[S.REDUCE].status == book.records[S.ISOLATE].status == StageStatus.SKIPPED  # not kept as done
    assert book.records[S.REDUCE].reason == "nothing to reduce: diff: diff found it"
    assert exit_code(list(book.records.values())) == 0  # the triage answered


def test_a_flaky_stage_fails_but_its_finding_feeds_the_rest():
    book = Book()
    book.behaviour[S.REDUCE] = StageProblem(StageStatus.FAILED, "5 instructions; FLAKY", 1)
    statuses = dict(zip(ORDER, book.run()))
    assert statuses[S.REDUCE] == StageStatus.FAILED and statuses[S.ISOLATE] == StageStatus.DONE
    assert exit_code(list(book.records.values())) == 1


def test_ctrl_c_leaves_the_stage_pending_saved_and_the_same_command_runs_it_again():
    book = Book()
    book.behaviour[S.PASSES] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        book.run()
    assert (
        book.records[S.PASSES].status == StageStatus.PENDING and "run the same command" in book.records[S.PASSES].reason
    )
    assert book.saves == 4 and S.REDUCE not in book.records
    del book.behaviour[S.PASSES]
    book.run()
    assert book.calls == [S.PASSES, S.REDUCE, S.ISOLATE, S.REPORT]


def test_an_os_error_is_a_stage_that_cannot_run():
    book = Book()
    book.behaviour[S.REDUCE] = OSError(28, "No space left on device")
    book.run()
    assert book.records[S.REDUCE].status == StageStatus.CANNOT_RUN and "No space" in book.records[S.REDUCE].reason


def test_the_dry_run_plan_assumes_what_runs_will_find():
    book = Book()
    plan = plan_stages(book.record, frozenset({S.DUMPS}), lambda s: "", lambda s: s in book.findings)
    actions = {p.stage: p.action for p in plan}
    assert actions[S.RELEASES] == Action.RUN and actions[S.DUMPS] == Action.SKIP
    assert actions[S.DIFF] == actions[S.REDUCE] == actions[S.ISOLATE] == Action.BLOCKED
    book.run()
    plan = plan_stages(book.record, frozenset(), lambda s: "", lambda s: s in book.findings)
    assert [p.action for p in plan] == [Action.KEEP] * (len(ORDER) - 1) + [Action.RUN]
    assert book.calls == list(ORDER)  # planning ran nothing
