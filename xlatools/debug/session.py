"""`xlatools debug`: the program under gdb, stopped where the named passes start.

plan_session() is pure (the gdb command line and the plan its script reads); execute_session()
runs gdb in the bundle, with the terminal when --interactive, and reads back what the script
recorded. The program's own settings (presets, XLA_FLAGS, interpreter) come from the caller as
a ProgramSpec, already bound to the bundle.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from xlatools.debug.crash import hook_env
from xlatools.debug.gdb import SESSION_SCRIPT
from xlatools.records.debug import Breakpoint, StopRecord
from xlatools.vocab import Status

PYSTACK_SIGNAL = int(signal.SIGRTMAX) - 2  # a real-time signal programs leave alone
RESULT = "session.json"


@dataclass(frozen=True)
class ProgramSpec:
    argv: list[str]  # the interpreter first
    env: dict[str, str]
    cwd: str
    dump_dir: str | None = None
    timeout: float | None = None


@dataclass(frozen=True)
class SessionOptions:
    breakpoints: list[Breakpoint]
    gdb: str
    max_stops: int = 1
    interactive: bool = False
    module_re: str | None = None  # stop only while a module of a matching name compiles


@dataclass(kw_only=True)
class GdbPlan:
    """What probes/gdb_session.py reads (gdb-plan.json): paths inside the bundle."""

    argv: list[str]
    bundle: str
    result: str
    stops_dir: str
    stdout: str
    stderr: str
    interactive: bool
    max_stops: int
    pystack_file: str
    pystack_signal: int
    dump_dir: str | None
    inferior_env: dict[str, str]  # the program's environment on top of gdb's own
    breakpoints: list[Breakpoint]
    module_re: str | None


@dataclass(frozen=True)
class SessionPlan:
    gdb_argv: list[str]
    gdb_env: dict[str, str]
    script: GdbPlan
    cwd: str
    timeout: float | None
    interactive: bool


@dataclass(kw_only=True)
class CrashSeen:
    signal: str  # the fatal signal gdb saw
    file: str  # native-backtrace.txt


@dataclass(kw_only=True)
class SessionAnswer:
    """What gdb's script wrote into session.json (after every change)."""

    stops: list[StopRecord] = field(default_factory=list)
    exit_code: int | None = None  # the program's
    signal: str | None = None  # the signal that ended the program
    crash: CrashSeen | None = None
    breakpoints: list[str] = field(default_factory=list)
    finished: bool = False


@dataclass
class SessionResult:
    status: Status  # ok (stopped), failed (no stop, or a crash), timeout, interrupted, error (gdb did not run it)
    answer: SessionAnswer = field(default_factory=SessionAnswer)
    error: str | None = None
    duration_s: float = 0.0


def plan_session(program: ProgramSpec, options: SessionOptions, bundle: Path) -> SessionPlan:
    """The gdb command and the script's plan; paths inside `bundle`. Pure."""
    pystack = str(bundle / "python-stacks.txt")
    inferior = hook_env(program.env, {"XLATOOLS_PYSTACK_FILE": pystack, "XLATOOLS_PYSTACK_SIGNAL": str(PYSTACK_SIGNAL)})
    script = GdbPlan(
        argv=program.argv,
        bundle=str(bundle),
        result=str(bundle / RESULT),
        stops_dir=str(bundle / "stops"),
        stdout=str(bundle / "stdout.log"),
        stderr=str(bundle / "stderr.log"),
        interactive=options.interactive,
        max_stops=options.max_stops,
        pystack_file=pystack,
        pystack_signal=PYSTACK_SIGNAL,
        dump_dir=program.dump_dir,
        inferior_env={k: v for k, v in inferior.items() if program.env.get(k) != v},
        breakpoints=list(options.breakpoints),
        module_re=options.module_re,
    )
    argv = [options.gdb, "-q", "-nx", "-iex", "set auto-load python-scripts off"]
    argv += [] if options.interactive else ["-batch"]
    argv += ["-x", str(SESSION_SCRIPT), program.argv[0]]
    gdb_env = {**program.env, "XLATOOLS_GDB_PLAN": str(bundle / "gdb-plan.json")}
    return SessionPlan(
        argv, gdb_env, script, program.cwd, None if options.interactive else program.timeout, options.interactive
    )


def execute_session(plan: SessionPlan, bundle: Path) -> SessionResult:
    """Run gdb to its end (or the timeout, or Ctrl-C) and read what its script recorded."""
    from xlatools.fsutil import atomic_write_json
    from xlatools.records.base import to_json
    from xlatools.redact import redact

    (bundle / "stops").mkdir(exist_ok=True)
    # gdb's script needs the program's real argv and environment; the bundle keeps them redacted, and the
    # real plan lives in a private file outside it for as long as gdb runs.
    atomic_write_json(bundle / "gdb-plan.json", redact(to_json(plan.script)), durable=False)
    handle, private = tempfile.mkstemp(prefix="xlatools-gdb-plan-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(to_json(plan.script), file)
        started = time.monotonic()
        ended = _run_gdb(replace(plan, gdb_env={**plan.gdb_env, "XLATOOLS_GDB_PLAN": private}), bundle)
    finally:
        os.unlink(private)
    result = _read_result(bundle, ended)
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def _run_gdb(plan: SessionPlan, bundle: Path) -> Status | str:
    """How gdb ended: Status.OK (it finished the script), TIMEOUT, INTERRUPTED, or `gdb exit N`."""
    from xlatools.proctree import end_tree, held_interrupts

    if plan.interactive:
        # gdb owns the terminal: Ctrl-C is gdb's (it stops the program), not ours.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            # no timeout on purpose: the user drives this gdb and ends it (the one such child xlatools starts)
            subprocess.run(plan.gdb_argv, env=plan.gdb_env, cwd=plan.cwd, check=False)
        finally:
            signal.signal(signal.SIGINT, previous)
        return Status.OK
    with open(bundle / "gdb.log", "wb") as log:
        proc: subprocess.Popen | None = None
        try:
            with held_interrupts():  # started and kept as one step: an interrupt stops it below
                proc = subprocess.Popen(
                    plan.gdb_argv,
                    env=plan.gdb_env,
                    cwd=plan.cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            proc.wait(timeout=plan.timeout)  # SIGTERM arrives as Ctrl-C (the bundle's lifecycle)
        except subprocess.TimeoutExpired:
            assert proc is not None  # only its wait times out
            end_tree(proc)
            return Status.TIMEOUT
        except KeyboardInterrupt:
            if proc is not None:
                end_tree(proc)
            return Status.INTERRUPTED
        except BaseException:
            if proc is not None:
                end_tree(proc)
            raise
    return Status.OK if proc.returncode == 0 else f"gdb exit {proc.returncode}"


def _read_result(bundle: Path, ended: Status | str) -> SessionResult:
    from xlatools.errors import UsageError
    from xlatools.records.base import read_record

    answer: SessionAnswer | None = None
    problem = ""
    try:
        answer = read_record(bundle / RESULT, SessionAnswer, "gdb session result")
    except UsageError as exc:
        problem = exc.message
    if ended in (Status.TIMEOUT, Status.INTERRUPTED):
        return SessionResult(Status(ended), answer or SessionAnswer())
    if answer is None:
        tail = _tail(bundle / "gdb.log")
        how = "gdb finished" if ended == Status.OK else ended
        return SessionResult(
            Status.ERROR,
            error=f"gdb did not run the session ({how}; {problem})" + (f"; gdb said: {tail}" if tail else ""),
        )
    failed = answer.crash is not None or not answer.stops
    return SessionResult(Status.FAILED if failed else Status.OK, answer)


def _tail(path: Path, lines: int = 8) -> str:
    from xlatools.fsutil import tail_lines

    kept = [line for line in tail_lines(path, 400) if line.strip() and not line.startswith("[New Thread")]
    return " | ".join(kept[-lines:])


def program_outcome(answer: SessionAnswer) -> str:
    if answer.signal:
        return f"killed by {answer.signal}"
    if answer.exit_code is not None:
        return f"exit {answer.exit_code}"
    return "not finished when gdb ended (killed or left in gdb)" if answer.stops else "did not finish"


def returncode(answer: SessionAnswer) -> int | None:
    """The program's status as runs record it (negative: killed by that signal)."""
    if answer.signal in signal.Signals.__members__:
        return -signal.Signals[answer.signal].value
    return answer.exit_code


def stop_lines(stops: list[StopRecord]) -> list[str]:
    """One line per stop, for the terminal and summary.txt."""
    lines = []
    for stop in stops:
        module = f"; module it receives: {stop.module_file}" if stop.module_file else ""
        function = (stop.function or "?").split("(")[0]
        lines.append(
            f"stop {stop.number}: {stop.label} in {function} (thread {stop.thread}){module}; "
            f"backtrace: {stop.backtrace}"
        )
    return lines
