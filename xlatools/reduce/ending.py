"""Why a reduction ended where it did, and what would take it further (pure): the last words of `reduce`.

A reduction ends when its time budget runs out, or when a whole round of its strategies finds no smaller
candidate that is still interesting. Either way the user is told which strategies found nothing (and why a
strategy had nothing to try), what the oracle could not judge (the snapshot's recorded result judges only
the module's own outputs; candidates it answered `skip` for; candidates the target's parser refused), and
what would go further (another oracle, more time).
"""

from __future__ import annotations

from typing import Sequence

from xlatools.records.reduce import Counters, ReduceEnd, Round
from xlatools.reduce.edits import Candidate
from xlatools.vocab import OracleKind

RECORDED_LIMIT = (
    "the snapshot's recorded result judges only the outputs the original module computes: cutting the module or "
    "turning its values into parameters or constants makes values it has no record of, so only `inline` and "
    "`outputs` ran (not `cut`, `front`, `each`)"
)
OTHER_ORACLES = (
    "a reference run as the oracle, which judges any candidate, so every strategy applies: --reference cpu (this "
    "interpreter's CPU backend at jaxlib's defaults: finds what the XLA flags or the platform change) or "
    "--reference-python PATH (another jaxlib, e.g. the one that recorded the snapshot)"
)


def explain_end(
    phases: tuple[str, ...],
    rounds: list[Round],
    counters: Counters,
    oracle: OracleKind,
    best: Candidate,
    *,
    out_of_time: bool,
    max_time: float | None,
    values_failed: bool,
    skipped: Sequence[str] = (),
) -> ReduceEnd:
    """The end of a reduction that ran `phases` (a round each, repeated until a whole pass changed nothing);
    `skipped`: why the oracle could not judge each candidate it answered `skip` for."""
    if out_of_time:
        end = ReduceEnd(reason=f"the --max-time budget ({max_time:g} s) ran out")
        end.further.append("run the same command again: it continues from the saved state (raise or drop --max-time)")
    else:
        end = ReduceEnd(reason="a whole round of its strategies found no smaller module that is still interesting")
        last = rounds[-len(phases) :] if len(rounds) >= len(phases) else rounds
        end.strategies = [_strategy_line(r, best, values_failed) for r in last]
    if oracle == OracleKind.RECORDED:
        end.not_judged.append(RECORDED_LIMIT)
        end.further.append(OTHER_ORACLES)
        end.further.append("--error REGEX or --script CMD when the bug is a failure rather than wrong values")
    if skipped:
        end.not_judged.append(f"{len(skipped)} candidate(s) the oracle could not judge (skip), e.g. {skipped[0]}")
    if counters.unparsable:
        end.not_judged.append(f"{counters.unparsable} candidate(s) the target's HLO parser refused")
    if values_failed and oracle != OracleKind.RECORDED:
        end.not_judged.append(
            "no recorded values (the module exposing every value did not run): no instruction could become a "
            "parameter fed with its value, only constants"
        )
    if "ddmin" in phases and not out_of_time:
        end.further.append("--strategy full: inlining, cuts and per-instruction replacements besides ddmin")
    if not end.further:
        end.further.append(
            "nothing more that xlatools tries: no single instruction of the result can be replaced and keep it "
            "interesting; edit reduced.hlo.txt by hand and reduce that file again"
        )
    return end


def _strategy_line(round_: Round, best: Candidate, values_failed: bool) -> str:
    if round_.candidates:
        return f"{round_.phase}: {round_.candidates} candidate(s), none smaller and still interesting"
    return f"{round_.phase}: nothing to try ({_idle(round_.phase, best, values_failed)})"


def _idle(phase: str, best: Candidate, values_failed: bool) -> str:
    """Why a strategy proposed no candidate for the module `best`."""
    entry = best.module.entry
    if phase == "inline":
        return "no call left to inline"
    if phase == "outputs":
        return "one output left"
    if phase == "front" and values_failed:
        return "no recorded values"
    if phase in ("cut", "front"):
        return f"{len(entry.instructions)} entry instruction(s): too few to cut"
    if phase == "ddmin":
        return "no instruction besides parameters and the root"
    return f"no smaller stand-in for any of the {best.module.instruction_count()} instructions"
