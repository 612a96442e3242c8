"""The stages of a triage and how one invocation goes through them (pure: stages are plain callables).

Stages run in TriageStage order. A stage needs the findings of some earlier ones (NEEDS): without
them it is `blocked`, saying which and why; every other stage still runs, so one that cannot run
never hides what the others find. A stage done in an earlier invocation is kept while what it was
computed from (its basis) is unchanged; `--skip STAGE` leaves a stage alone this time (a finding it
made before still counts). The report stage runs every time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Callable

from xlatools.errors import EXIT_FAILED, EXIT_MISSING, EXIT_OK, Interrupted, XlaToolsError
from xlatools.records.triage import StageRecord
from xlatools.vocab import StageStatus, TriageStage

if TYPE_CHECKING:
    from xlatools.console import Reporter

ORDER = tuple(TriageStage)
NEEDS: dict[TriageStage, tuple[TriageStage, ...]] = {
    TriageStage.DIFF: (TriageStage.DUMPS,),
    TriageStage.REDUCE: (TriageStage.DIFF,),
    TriageStage.ISOLATE: (TriageStage.DIFF,),
}
ALWAYS = frozenset({TriageStage.REPORT})  # re-rendered from the findings on every run
WORK = {  # what each stage runs, for --dry-run (`work(stage, good, bad)`) and the docs
    TriageStage.RELEASES: "bisect releases --good {good} --bad {bad} with the program as the test: last good, first bad",
    TriageStage.DUMPS: "run the program on last good and first bad with HLO text and snapshot dumps",
    TriageStage.DIFF: "diff the two runs; replay first bad's modules with last good as the reference (a module that "
    "mismatches, or one that crashes on first bad and runs on last good)",
    TriageStage.PASSES: "bisect passes on first bad (candidates: the passes that changed the module that differs)",
    TriageStage.REDUCE: "reduce the module that differs (oracle: mismatch against last good; of a crash: the same "
    "signal in the same phase)",
    TriageStage.ISOLATE: "replay --isolate: the reduced module (else the module that differs), instruction by instruction",
    TriageStage.REPORT: "ISSUE.md: every finding, linked, and the minimal module's report",
}


def work(stage: TriageStage, good: str, bad: str) -> str:
    """What `stage` runs, with the versions of this triage."""
    return WORK[stage].format(good=good, bad=bad)


class Action(StrEnum):
    RUN = "run"
    KEEP = "keep"  # done before, on the same basis
    SKIP = "skip"  # --skip
    BLOCKED = "blocked"  # a stage it needs has no finding
    NOTHING_TO_DO = "nothing to do"  # a stage it needs ran and found nothing for it (diff: precision differences only)


@dataclass(frozen=True)
class PlannedStage:
    stage: TriageStage
    action: Action
    reason: str = ""


class StageProblem(Exception):
    """A stage ends other than done, on purpose: its status, why, and the exit code it stands for."""

    def __init__(self, status: StageStatus, reason: str, exit_code: int):
        super().__init__(reason)
        self.status, self.reason, self.exit_code = status, reason, exit_code


def decide(
    stage: TriageStage,
    record: StageRecord,
    skip: frozenset[TriageStage],
    basis: str,
    found: Callable[[TriageStage], bool],
    records: Callable[[TriageStage], StageRecord],
) -> PlannedStage:
    """What to do with `stage` now (pure)."""
    if stage in skip:
        return PlannedStage(stage, Action.SKIP, "--skip")
    missing = [need for need in NEEDS.get(stage, ()) if not found(need)]
    answered = [need for need in missing if records(need).status == StageStatus.DONE]
    if answered:  # done, and what it found leaves this stage nothing to work on
        why = "; ".join(f"{need}: {records(need).reason}" for need in answered)
        return PlannedStage(stage, Action.NOTHING_TO_DO, f"nothing to {stage}: {why}")
    if missing:
        why = "; ".join(f"{need}: {records(need).status}" for need in missing)  # its own record says why
        return PlannedStage(stage, Action.BLOCKED, f"needs what the {', '.join(missing)} stage finds ({why})")
    if record.status == StageStatus.DONE and record.basis == basis and stage not in ALWAYS:
        return PlannedStage(stage, Action.KEEP, "done before")
    return PlannedStage(stage, Action.RUN)


def plan_stages(
    records: Callable[[TriageStage], StageRecord],
    skip: frozenset[TriageStage],
    basis_of: Callable[[TriageStage], str],
    found: Callable[[TriageStage], bool],
) -> list[PlannedStage]:
    """`--dry-run`: what an invocation would do, assuming every stage it runs finds what it looks for."""
    assumed: set[TriageStage] = set()
    plan = []
    for stage in ORDER:
        planned = decide(stage, records(stage), skip, basis_of(stage), lambda s: s in assumed or found(s), records)
        if planned.action in (Action.RUN, Action.KEEP) or found(stage):
            assumed.add(stage)
        plan.append(planned)
    return plan


def _status_of(exc: XlaToolsError | StageProblem | OSError) -> tuple[StageStatus, str, int]:
    if isinstance(exc, StageProblem):
        return exc.status, exc.reason, exc.exit_code
    if isinstance(exc, XlaToolsError):
        message = exc.message + (f" ({exc.hint})" if exc.hint else "")
        status = StageStatus.FAILED if exc.exit_code == EXIT_FAILED else StageStatus.CANNOT_RUN
        return status, message, exc.exit_code
    return (
        StageStatus.CANNOT_RUN,
        f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else ""),
        EXIT_MISSING,
    )


def run_stage(record: StageRecord, runner: Callable[[], str], basis: str, now: Callable[[], str]) -> None:
    """Run one stage into its record: done with the runner's summary, or how it ended otherwise.
    Ctrl-C leaves the stage pending (the same command runs it again) and goes on up."""
    record.started, record.finished, record.seconds, record.exit_code = now(), None, None, None
    t0 = time.monotonic()
    try:
        summary = runner()
        record.status, record.reason, record.basis = StageStatus.DONE, summary, basis
    except (KeyboardInterrupt, Interrupted):
        record.status, record.reason = StageStatus.PENDING, "interrupted; run the same command again to continue"
        raise
    except (XlaToolsError, StageProblem, OSError) as exc:
        record.status, record.reason, record.exit_code = _status_of(exc)
        record.basis = basis
    finally:
        record.finished, record.seconds = now(), round(time.monotonic() - t0, 3)


def run_stages(
    records: Callable[[TriageStage], StageRecord],
    runners: dict[TriageStage, Callable[[], str]],
    skip: frozenset[TriageStage],
    basis_of: Callable[[TriageStage], str],
    found: Callable[[TriageStage], bool],
    save: Callable[[], None],
    now: Callable[[], str],
    reporter: Reporter,
) -> None:
    """Every stage in order: kept, skipped, blocked or run; `save` after each."""
    for number, stage in enumerate(ORDER, 1):
        record = records(stage)
        basis = basis_of(stage)
        planned = decide(stage, record, skip, basis, found, records)
        head = f"[triage] {number}/{len(ORDER)} {stage}"
        if planned.action == Action.RUN:
            reporter.step(f"{head}: running")
            try:
                run_stage(record, runners[stage], basis, now)
            finally:
                save()
            say = reporter.info if record.status == StageStatus.DONE else reporter.warn
            say(f"{head}: {record.status}: {record.reason}")
            continue
        if planned.action == Action.KEEP:
            reporter.info(f"{head}: done before: {record.reason}")
            continue
        if planned.action != Action.SKIP or record.status != StageStatus.DONE:  # --skip keeps what it found before
            record.status = StageStatus.BLOCKED if planned.action == Action.BLOCKED else StageStatus.SKIPPED
            record.reason, record.exit_code = planned.reason, None
        reporter.info(f"{head}: {planned.action}: {planned.reason}")
        save()


def exit_code(records: list[StageRecord]) -> int:
    """0 when every stage is done or skipped; else the code of the first that is not (3 for a blocked one)."""
    for record in records:
        if record.status in (StageStatus.DONE, StageStatus.SKIPPED):
            continue
        return record.exit_code if record.exit_code not in (None, EXIT_OK) else EXIT_MISSING
    return EXIT_OK
