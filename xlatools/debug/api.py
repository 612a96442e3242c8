"""A debug session end to end: a fresh bundle, gdb, the final manifest and summary.

The bundle's lifecycle is kept in this one module (running manifest, final manifest with the
file index, a failure record through the disk-full reserve), so that moving it onto the shared
bundle lifecycle is a local change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from xlatools.debug.session import ProgramSpec, SessionOptions, SessionResult, program_outcome, stop_lines
from xlatools.errors import EnvironmentMissing, Interrupted, TimedOut

MANIFEST_SCHEMA = "xlatools.debug/1"
EXIT_CODES = {"ok": 0, "failed": 1, "timeout": TimedOut.exit_code, "interrupted": Interrupted.exit_code,
              "error": EnvironmentMissing.exit_code}


@dataclass(frozen=True)
class DebugRequest:
    name: str
    out: Path
    options: SessionOptions
    command: list[str]  # xlatools' own argv, for the manifest
    target: dict = field(default_factory=dict)  # the target's versions, as the run's probe reported them
    libraries: list[str] = field(default_factory=list)
    gdb_version: str | None = None


@dataclass
class DebugOutcome:
    bundle: Path
    result: SessionResult
    exit_code: int
    manifest: dict


def run_debug(request: DebugRequest, bind: Callable[[Path], ProgramSpec]) -> DebugOutcome:
    """Create the bundle, run the session in it, and write the final records."""
    import os

    from xlatools.bundle import Bundle
    from xlatools.debug.session import execute_session, plan_session

    bundle = Bundle.create(Path(os.path.abspath(request.out)), request.name, "debug")
    program = bind(bundle.path)
    plan = plan_session(program, request.options, bundle.path)
    base = _manifest(request, program)
    try:
        bundle.write_manifest(base)
        result = execute_session(plan, bundle.path)
        final = _final(base, result)
        _write_summary(bundle.path, final, result)
        final["files"] = bundle.file_index()
        bundle.write_manifest(final)
    except OSError as exc:
        try:
            bundle.write_manifest({**base, "status": "error", "exit_code": EnvironmentMissing.exit_code,
                                   "error": f"cannot write the session's records: {exc.strerror or exc}"},
                                  use_reserve=True)
        except OSError:
            pass
        raise EnvironmentMissing(f"cannot write the debug session's records in {bundle.path}: {exc.strerror or exc}",
                                 hint="free some space (or pick another --out) and run again") from None
    return DebugOutcome(bundle.path, result, final["exit_code"], final)


def _manifest(request: DebugRequest, program: ProgramSpec) -> dict:
    from xlatools import __version__
    from xlatools.bundle import host_info, redact_argv

    return {
        "status": "running", "manifest_schema": MANIFEST_SCHEMA, "xlatools_version": __version__,
        "command": "xlatools " + " ".join(redact_argv(request.command)), "argv": request.command,
        "program_argv": program.argv, "cwd": program.cwd, "host": host_info(), "target": request.target,
        "gdb": {"path": request.options.gdb, "version": request.gdb_version},
        "libraries": request.libraries, "breakpoints": [b.to_json() for b in request.options.breakpoints],
        "max_stops": request.options.max_stops, "interactive": request.options.interactive,
        "timeout": program.timeout, "xla_dump": program.dump_dir,
    }


def _final(base: dict, result: SessionResult) -> dict:
    from xlatools.bundle import utc_now

    fields = asdict(result)
    return {**base, "status": result.status, "exit_code": EXIT_CODES[result.status],
            "program_outcome": program_outcome(result), "finished": utc_now(),
            **{k: fields[k] for k in ("stops", "signal", "crash", "error", "duration_s")},
            "program_exit_code": result.exit_code}


def _write_summary(bundle: Path, final: dict, result: SessionResult) -> None:
    from xlatools.fsutil import atomic_write_text

    atomic_write_text(bundle / "summary.txt", "\n".join(summary_lines(final, result)) + "\n", durable=False)


def summary_lines(final: dict, result: SessionResult) -> list[str]:
    lines = [f"status: {final['status']} (xlatools exit {final['exit_code']}; program {final['program_outcome']})",
             f"breakpoints: {', '.join(b['label'] for b in final['breakpoints'])}"]
    lines += stop_lines(result)
    if not result.stops and result.status in ("ok", "failed"):
        lines.append("no breakpoint was hit: the program never started those passes (is the computation cached? "
                     "is the pass in this backend's pipeline?)")
    if result.crash:
        lines.append(f"the program died by {result.crash['signal']}: native backtrace in {result.crash['file']}")
    if result.error:
        lines.append(f"error: {result.error}")
    return lines
