"""A crash regression in a triage: a module that dies on the first bad release and runs on the last good one
is the finding (docs/crashes.md). What the stages do with it (pure but reading the crash's backtrace file):

- diff: `crash_of` picks the module and says what crashed, where (the crashing thread's top frames) and how;
- passes: `crash_test` makes the program test ask for the same death (its fatal line in the output and the exit
  status of the first bad run); any other failure is a skip, never bad (disabling every pass may break the
  compile in another way, which says nothing about this crash);
- reduce: the crash oracle (the same signal in the same phase; the reduced module's top frames are compared
  with these at the end);
- isolate: nothing to isolate in a crash (the reduced module is the finding).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.records.reduce import CrashSignature, ReduceRequest
from xlatools.records.triage import CrashFound, DiffFound, TriageState
from xlatools.vocab import ReplayOutcome

if TYPE_CHECKING:
    from xlatools.bisect.checks import TestOptions
    from xlatools.records.replay import ModuleRecord

FAILURES = (ReplayOutcome.CRASH, ReplayOutcome.COMPILE_ERROR, ReplayOutcome.RUNTIME_ERROR)
# What Python's faulthandler prints for each fatal signal (run sets PYTHONFAULTHANDLER=1; children inherit it).
FAULTHANDLER = {
    "SIGSEGV": "Segmentation fault",
    "SIGABRT": "Aborted",
    "SIGFPE": "Floating-point exception",
    "SIGBUS": "Bus error",
    "SIGILL": "Illegal instruction",
}


def crash_of(modules: list[ModuleRecord]) -> tuple[ModuleRecord, CrashFound] | None:
    """The first module whose test run (first bad) failed while every reference (last good) ran it to the end."""
    for module in modules:
        if module.outcome not in FAILURES or not module.runs:
            continue
        test, references = module.runs[0], module.runs[1:]
        if not test.failure or test.phase == "load" or not references or any(r.failure for r in references):
            continue
        frames = _frames(test.native_backtrace)
        found = CrashFound(
            failure=str(test.failure),
            phase=test.phase,
            signal=test.signal,
            message=_first_line("" if test.signal else test.message or "", test.log_tail),
            frames=frames,
            backtrace=test.native_backtrace,
        )
        return module, found
    return None


def _frames(path: str | None) -> list[str]:
    from xlatools.debug.crash import crashing_frames

    if not path:
        return []
    try:
        return crashing_frames(Path(path).read_text(errors="replace"))
    except OSError:
        return []


def _first_line(message: str, log_tail: list[str]) -> str:
    """What the compiler said: a failed CHECK or an error status line of the log, else the message's first line
    (empty for a signal: replay's own words about the death add nothing to the signal)."""
    for line in log_tail:
        if "Check failed" in line or re.search(r"\b(INTERNAL|FAILED_PRECONDITION|INVALID_ARGUMENT):", line):
            return line.strip()[:300]
    return (message.strip().splitlines() or [""])[0][:300]


def crash_test(options: TestOptions, crash: CrashFound, first_bad_exit: int | None) -> TestOptions:
    """The pass bisection's test for a crash: bad = the same death (its fatal line in the output, and the first
    bad run's exit status); a program test of the user's own (--match, --metric, --bad-exit) is kept."""
    rule = options.rule
    if rule.match is not None or rule.metric is not None or rule.bad_exit:
        return options
    if crash.signal and crash.signal in FAULTHANDLER:
        match = re.escape(f"Fatal Python error: {FAULTHANDLER[crash.signal]}")
    elif crash.message:
        match = re.escape(crash.message[:120])
    else:
        return options
    bad_exit = (first_bad_exit,) if first_bad_exit is not None and first_bad_exit != 0 else ()
    # The diff stage has the crash's backtrace: a step needs only its verdict, not gdb's 30-60 s on every crash.
    env = (*options.env, "XLATOOLS_NATIVE_BACKTRACE=0")
    return replace(options, rule=replace(rule, match=match, match_in="output", bad_exit=bad_exit), env=env)


def passes_test(state: TriageState, options: TestOptions) -> TestOptions:
    """The test of the passes stage: the program's own, or for a crash finding `crash_test`'s."""
    crash, runs = state.diff.crash if state.diff else None, state.dumps
    return crash_test(options, crash, runs.first_bad.exit_code if runs else None) if crash else options


def diff_finding(found: DiffFound, modules: list[ModuleRecord], counted: str, good: str, bad: str) -> str:
    """The diff stage without a mismatch: a module that crashes on `bad` and runs on `good` is the finding;
    else nothing to work on (cannot-run, as before)."""
    from xlatools.errors import EXIT_MISSING
    from xlatools.triage.stages import StageProblem
    from xlatools.vocab import StageStatus

    hit = crash_of(modules)
    if hit is None:
        outcomes = ", ".join(f"{m.label} {m.outcome}" for m in modules) or "no module replayed"
        raise StageProblem(
            StageStatus.CANNOT_RUN,
            f"{counted}; no module of jax {bad} mismatches or crashes against jax {good} when replayed ({outcomes})",
            EXIT_MISSING,
        )
    module, found.crash = hit
    found.module = str(module.id) if module.id is not None else module.name
    found.module_name, found.module_label = module.name, module.label
    found.mismatch = f"crashes: {found.crash.what()}"
    where = f"; top frame {found.crash.frames[0]}" if found.crash.frames else ""
    return f"{counted}; module {module.label} crashes on jax {bad} ({found.crash.what()}) and runs on jax {good}{where}"


def reduce_request(request: ReduceRequest, crash: CrashFound) -> ReduceRequest:
    """The reduction of a crashing module: the crash oracle instead of a comparison with the last good release."""
    signature = CrashSignature(
        failure=ReplayOutcome(crash.failure),
        signal=crash.signal,
        phase=crash.phase,
        message=None if crash.signal else crash.message or None,
        frames=list(crash.frames),
    )
    return replace(request, reference_pythons=[], crash=signature)


NOT_ISOLATED = "nothing to isolate in a crash: the reduced module (or the crashing module) is the finding"
