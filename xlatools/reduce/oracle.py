"""Is a candidate interesting? Verdicts from replay's run records, or from a check script (pure but the script).

A verdict is about the candidate module only: a reference that cannot run, or a script
that answers 125, says nothing about it (interesting = None, "skip"), and the reduction
treats that candidate as not kept.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from xlatools.errors import EnvironmentMissing
from xlatools.records.reduce import FailureSeen, OracleSpec, Verdict
from xlatools.records.replay import RunRecord
from xlatools.vocab import Interest, OracleKind, ReplayOutcome, Status

FAILURE_KINDS = (ReplayOutcome.COMPILE_ERROR, ReplayOutcome.RUNTIME_ERROR, ReplayOutcome.CRASH)
INTERESTING, NOT_INTERESTING, SKIP = Interest.INTERESTING, Interest.NOT_INTERESTING, Interest.SKIP


def _failed(run: RunRecord) -> str:
    return f"{run.failure} during {run.phase or 'start-up'}: {(run.message or '')[:300]}"


def _seen(run: RunRecord) -> FailureSeen:
    return FailureSeen(
        failure=ReplayOutcome(run.failure), phase=run.phase, signal=run.signal, message=(run.message or "")[:500]
    )


def judge_outputs(spec: OracleSpec, test: RunRecord, reference: RunRecord | None) -> Verdict:
    """mismatch / recorded oracles: the comparisons replay made."""
    if test.failure:
        return Verdict(interest=NOT_INTERESTING, reason=f"the test run failed ({_failed(test)})", failure=_seen(test))
    if spec.kind == OracleKind.MISMATCH:
        if reference is None:
            raise ValueError("a mismatch oracle needs a reference run")
        if reference.failure:
            return Verdict(
                interest=SKIP, reason=f"the reference cannot run it ({_failed(reference)})", failure=_seen(reference)
            )
        comparisons = reference.comparisons
    else:
        comparisons = test.comparisons
    if not comparisons:
        return Verdict(interest=SKIP, reason="nothing to compare with")
    c = comparisons[0]
    if c.ok:
        return Verdict(
            interest=NOT_INTERESTING, reason=f"outputs match (max abs error {c.max_abs_error:.3g})", comparison=c
        )
    if c.message:
        return Verdict(interest=INTERESTING, reason=f"outputs differ: {c.message}", comparison=c)
    from xlatools.replay.outcome import difference

    return Verdict(interest=INTERESTING, comparison=c, reason=difference(c))


def judge_error(spec: OracleSpec, test: RunRecord, allow_load: bool = False) -> Verdict:
    """error oracle: a compile/runtime error or crash whose message (or log, or signal) matches."""
    if not test.failure:
        return Verdict(interest=NOT_INTERESTING, reason="the test run succeeded")
    seen = _seen(test)
    if test.failure not in FAILURE_KINDS or (test.phase == "load" and not allow_load):
        return Verdict(interest=NOT_INTERESTING, reason=f"a failure of another kind ({_failed(test)})", failure=seen)
    text = "\n".join([test.message or "", test.signal or "", *test.log_tail])
    if re.search(spec.error_regex or "", text):
        return Verdict(
            interest=INTERESTING,
            reason=f"{test.failure} during {test.phase} matches /{spec.error_regex}/",
            failure=seen,
        )
    return Verdict(
        interest=NOT_INTERESTING,
        failure=seen,
        reason=f"{test.failure} during {test.phase}, but /{spec.error_regex}/ does not match",
    )


def judge_crash(spec: OracleSpec, test: RunRecord) -> Verdict:
    """crash oracle: the test dies as the original did: the same signal (or, without one, the same kind of
    compiler failure and its telling line) in the same phase. Any other end is not interesting: a candidate that
    dies elsewhere or otherwise is another bug."""
    crash = spec.crash
    if crash is None:
        raise ValueError("a crash oracle needs the original's crash")
    if not test.failure:
        return Verdict(interest=NOT_INTERESTING, reason="the test run succeeded")
    seen = _seen(test)
    same_kind = test.signal == crash.signal if crash.signal else test.failure == crash.failure
    same_phase = crash.phase is None or test.phase == crash.phase
    said = not crash.message or crash.signal or crash.message in "\n".join([test.message or "", *test.log_tail])
    if test.phase != "load" and same_kind and same_phase and said:
        return Verdict(interest=INTERESTING, reason=f"{_failed(test)} (as the original)", failure=seen)
    return Verdict(interest=NOT_INTERESTING, reason=f"another failure: {_failed(test)}", failure=seen)


def script_verdict(returncode: int | None, status: Status, timeout: float | None) -> Verdict:
    """git bisect run semantics: 0 not interesting, 125 skip, 1-127 interesting; others: the script is broken."""
    if status == Status.TIMEOUT:
        return Verdict(interest=SKIP, reason=f"the script did not finish in {timeout:g} s (skip)")
    if returncode == 0:
        return Verdict(interest=NOT_INTERESTING, reason="the script exited 0", script_exit=0)
    if returncode == 125:
        return Verdict(interest=SKIP, reason="the script exited 125 (skip)", script_exit=125)
    if returncode is not None and 1 <= returncode <= 127:
        return Verdict(interest=INTERESTING, reason=f"the script exited {returncode}", script_exit=returncode)
    raise EnvironmentMissing(
        f"the check script ended with status {returncode} (not 0-127){_killed_by(returncode)}",
        hint="like git bisect run: 0 = not interesting, 1-127 = interesting, 125 = skip",
    )


def _killed_by(returncode: int | None) -> str:
    """`: killed by SIGKILL` when the status says a signal ended the script (-N from Python, 128+N from a shell)."""
    from xlatools.proctree import signal_name

    if returncode is not None and 128 < returncode <= 128 + 64:
        returncode = 128 - returncode  # the shell's 128+N, as Popen's -N
    name = signal_name(returncode)
    return f": killed by {name}" if name else ""


def run_script(
    spec: OracleSpec, module: Path, inputs: Path | None, folder: Path, env: dict[str, str], timeout: float | None
) -> Verdict:
    """Run the script on one candidate: its HLO file is the last argument; XLATOOLS_REDUCE_HLO / _INPUTS name them."""
    from xlatools.errors import Interrupted
    from xlatools.fsutil import keep_ends
    from xlatools.run.process import execute

    argv = ["/bin/sh", "-c", f"{spec.script} {shlex.quote(str(module))}"]
    env = {**env, "XLATOOLS_REDUCE_HLO": str(module)}
    if inputs is not None:
        env["XLATOOLS_REDUCE_INPUTS"] = str(inputs)
    from xlatools.proctree import leaving_nothing

    logs = (folder / "script.stdout.log", folder / "script.stderr.log")
    with leaving_nothing(env) as (env, ended):  # what the script leaves running (`setsid sleep 300 &`) ends with it
        result = execute(argv, env, str(folder), *logs, timeout, None, None, on_start=ended)
    for log in ("script.stdout.log", "script.stderr.log"):  # one per candidate: a loud script must not fill the disk
        keep_ends(folder / log)
    if result.status == Status.INTERRUPTED:
        raise Interrupted("interrupted while the check script ran")
    return script_verdict(result.returncode, result.status, timeout)


def same_frames(original: list[str], reduced: list[str], count: int = 3) -> bool | None:
    """Whether the reduced module dies in the same functions (the first `count` named frames); None: unknown."""
    a, b = [_function(f) for f in original[:count]], [_function(f) for f in reduced[:count]]
    if not a or not b:
        return None
    return a == b


def _function(frame: str) -> str:
    """`#8 bool slinky::internal::can_fuse<...>(long, ...) () from libjax_common.so` -> `slinky::internal::can_fuse`."""
    from xlatools.run.hang.stacks import short

    text = re.sub(r"^#\d+\s+", "", frame)
    text = re.sub(r"\s+(from|at)\s+\S+$", "", text)
    return short(re.sub(r"\s*\(\)\s*$", "", text))
