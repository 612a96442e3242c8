"""A debug session end to end: a fresh bundle (the one bundle lifecycle), gdb, the final
manifest and summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.debug.session import ProgramSpec, SessionOptions, SessionResult
from xlatools.records.debug import DebugManifest, GdbInfo
from xlatools.vocab import Status

if TYPE_CHECKING:
    from xlatools.console import Reporter


@dataclass(frozen=True, kw_only=True)
class DebugRequest:
    name: str
    out: Path
    options: SessionOptions
    libraries: list[str]  # the shared objects the pass map came from
    gdb_version: str | None = None


@dataclass
class DebugOutcome:
    record: DebugManifest
    exit_code: int


# The program gdb starts, bound to the bundle, and the manifest of its run (kind "debug").
Bind = Callable[[Path], tuple[ProgramSpec, DebugManifest]]


def run_debug(request: DebugRequest, bind: Bind, reporter: Reporter) -> DebugOutcome:
    """Create the bundle, run the session in it, and write the final records."""
    from xlatools.bundle import bundle_session
    from xlatools.debug.session import execute_session, plan_session

    with bundle_session(
        request.out, DebugManifest(), name=request.name, write_running=False, reporter=reporter
    ) as session:
        program, record = bind(session.path)
        options = request.options
        record.gdb = GdbInfo(path=options.gdb, version=request.gdb_version)
        record.libraries, record.breakpoints = list(request.libraries), list(options.breakpoints)
        record.max_stops, record.interactive, record.hlo_module = (
            options.max_stops,
            options.interactive,
            options.module_re,
        )
        session.adopt(record)
        session.save()
        plan = plan_session(program, options, session.path)
        reporter.step(
            f"{' '.join(program.argv[1:]) or program.argv[0]} under gdb -> {session.path}"
            + ("" if options.interactive else "  (output in the bundle's logs)")
        )
        result = execute_session(plan, session.path)
        _finish(session, result)
    return DebugOutcome(session.record, session.record.exit_code)


def _finish(session, result: SessionResult) -> None:
    from xlatools.debug.session import program_outcome, returncode
    from xlatools.errors import exit_code_for
    from xlatools.fsutil import atomic_write_text

    record: DebugManifest = session.record
    answer = result.answer
    record.stops, record.signal, record.returncode = answer.stops, answer.signal, returncode(answer)
    record.program_outcome, record.duration_s = program_outcome(answer), result.duration_s
    record.native_backtrace = answer.crash.file if answer.crash else None
    record.status, record.exit_code, record.error = result.status, exit_code_for(result.status), result.error
    atomic_write_text(session.path / "summary.txt", "\n".join(summary_lines(record)) + "\n", durable=False)
    session.finish(result.status)


def summary_lines(record: DebugManifest) -> list[str]:
    from xlatools.debug.session import stop_lines

    lines = [
        f"status: {record.status} (xlatools exit {record.exit_code}; program {record.program_outcome})",
        f"breakpoints: {', '.join(b.label for b in record.breakpoints)}",
    ]
    lines += stop_lines(record.stops)
    if not record.stops and record.status in (Status.OK, Status.FAILED):
        lines.append(
            "no breakpoint was hit: the program never started those passes (is the computation cached? "
            "is the pass in this backend's pipeline?)"
        )
    if record.native_backtrace:
        lines.append(
            f"the program died by {record.signal or 'a fatal signal'}: native backtrace in {record.native_backtrace}"
        )
    if record.error:
        lines.append(f"error: {record.error}")
    return lines
