"""`xlatools debug`: the program under gdb, stopped where the named passes start.

plan_session() is pure (the gdb command line and the plan its script reads); execute_session()
runs gdb in the bundle, with the terminal when --interactive, and reads back what the script
recorded. The program's own settings (presets, XLA_FLAGS, interpreter) come from the caller as
a ProgramSpec, already bound to the bundle.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from xlatools.debug.breaks import Breakpoint
from xlatools.debug.crash import hook_env
from xlatools.debug.gdb import SESSION_SCRIPT

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


@dataclass(frozen=True)
class SessionPlan:
    gdb_argv: list[str]
    gdb_env: dict[str, str]
    script_plan: dict  # what probes/gdb_session.py reads (JSON)
    cwd: str
    timeout: float | None
    interactive: bool


@dataclass
class SessionResult:
    status: str  # ok, failed, timeout, interrupted, error
    stops: list[dict] = field(default_factory=list)  # stop.json of each stop
    exit_code: int | None = None  # the program's
    signal: str | None = None  # the signal that ended the program
    crash: dict | None = None
    error: str | None = None
    duration_s: float = 0.0


def plan_session(program: ProgramSpec, options: SessionOptions, bundle: Path) -> SessionPlan:
    """The gdb command and the script's plan; paths inside `bundle`. Pure."""
    pystack = str(bundle / "python-stacks.txt")
    inferior = hook_env(program.env, {"XLATOOLS_PYSTACK_FILE": pystack, "XLATOOLS_PYSTACK_SIGNAL": str(PYSTACK_SIGNAL)})
    inferior_env = {k: v for k, v in inferior.items() if program.env.get(k) != v}
    script_plan = {
        "argv": program.argv, "bundle": str(bundle), "result": str(bundle / RESULT),
        "stops_dir": str(bundle / "stops"), "stdout": str(bundle / "stdout.log"), "stderr": str(bundle / "stderr.log"),
        "interactive": options.interactive, "max_stops": options.max_stops, "pystack_file": pystack,
        "pystack_signal": PYSTACK_SIGNAL, "dump_dir": program.dump_dir, "inferior_env": inferior_env,
        "breakpoints": [b.to_json() for b in options.breakpoints], "module_re": options.module_re,
    }
    argv = [options.gdb, "-q", "-nx", "-iex", "set auto-load python-scripts off"]
    argv += [] if options.interactive else ["-batch"]
    argv += ["-x", str(SESSION_SCRIPT), program.argv[0]]
    gdb_env = {**program.env, "XLATOOLS_GDB_PLAN": str(bundle / "gdb-plan.json")}
    return SessionPlan(argv, gdb_env, script_plan, program.cwd, None if options.interactive else program.timeout,
                       options.interactive)


def execute_session(plan: SessionPlan, bundle: Path) -> SessionResult:
    """Run gdb to its end (or the timeout, or Ctrl-C) and read what its script recorded."""
    from xlatools.fsutil import atomic_write_json

    (bundle / "stops").mkdir(exist_ok=True)
    atomic_write_json(bundle / "gdb-plan.json", plan.script_plan, durable=False)
    started = time.monotonic()
    status = _run_gdb(plan, bundle)
    result = _read_result(bundle, status)
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def _run_gdb(plan: SessionPlan, bundle: Path) -> str:
    from xlatools.proctree import end_tree, sigterm_as_interrupt

    if plan.interactive:
        # gdb owns the terminal: Ctrl-C is gdb's (it stops the program), not ours.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            subprocess.run(plan.gdb_argv, env=plan.gdb_env, cwd=plan.cwd, check=False)
        finally:
            signal.signal(signal.SIGINT, previous)
        return "finished"
    with open(bundle / "gdb.log", "wb") as log:
        proc = subprocess.Popen(plan.gdb_argv, env=plan.gdb_env, cwd=plan.cwd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            with sigterm_as_interrupt():
                proc.wait(timeout=plan.timeout)
        except subprocess.TimeoutExpired:
            end_tree(proc)
            return "timeout"
        except KeyboardInterrupt:
            end_tree(proc)
            return "interrupted"
        except BaseException:
            end_tree(proc)
            raise
    return "finished" if proc.returncode == 0 else f"gdb exit {proc.returncode}"


def _read_result(bundle: Path, how: str) -> SessionResult:
    try:
        data = json.loads((bundle / RESULT).read_text())
    except (OSError, ValueError):
        data = None
    if how in ("timeout", "interrupted"):
        return SessionResult(how, **_fields(data))
    if data is None:
        tail = _tail(bundle / "gdb.log")
        return SessionResult("error", error=f"gdb did not run the session ({how})" + (f": {tail}" if tail else ""))
    result = SessionResult("ok", **_fields(data))
    if result.crash or not result.stops:
        result.status = "failed"
    return result


def _fields(data: dict | None) -> dict:
    if not data:
        return {}
    return {"stops": data.get("stops", []), "exit_code": data.get("exit_code"), "signal": data.get("signal"),
            "crash": data.get("crash")}


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith("[New Thread")]
    return " | ".join(kept[-lines:])


def program_outcome(result: SessionResult) -> str:
    if result.signal:
        return f"killed by {result.signal}"
    if result.exit_code is not None:
        return f"exit {result.exit_code}"
    return "not finished when gdb ended (killed or left in gdb)" if result.stops else "did not finish"


def stop_lines(result: SessionResult) -> list[str]:
    """One line per stop, for the terminal and summary.txt."""
    lines = []
    for stop in result.stops:
        module = f"; module it receives: {stop['dir']}/module-before.txt" if stop.get("module_dump") else ""
        lines.append(f"stop {stop['number']}: {stop['label']} in {stop['function'].split('(')[0]} "
                     f"(thread {stop['thread']}){module}; backtrace: {stop['dir']}/backtrace.txt")
    return lines

