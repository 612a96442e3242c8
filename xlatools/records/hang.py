"""What a run that stopped moving leaves: every process's stacks, where each one is, and the odd one out
(run/hang/; docs/hangs.md). A run manifest's `stuck`."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlatools.records.base import OMIT_NONE


@dataclass(kw_only=True)
class ModuleSeen:
    """A jitted module a process compiled or executed (the run's observer; else read off its stacks)."""

    name: str
    m: int | None = None  # the process's compilation number (the observer's)
    source: str = "stacks"  # observer | stacks


@dataclass(kw_only=True)
class StuckProcess:
    """One process when the run was stopped: where it was, from its stacks (and the observer's status)."""

    pid: int
    process: int | None = None  # its index in a multi-process run (None: the only one, or a child of it)
    file: str | None = None  # its stacks, relative to the bundle (None: they could not be read)
    state: str = "unknown"  # compiling | executing | python | unknown
    collective: str | None = None  # the collective it waits in (frames), when it is in one
    where: str = ""  # in words: the innermost frames that say where (a Python line, XLA's pass or emitter, ...)
    phase: str | None = None  # compiling: hlo-passes | emitter | llvm | mlir | compiler
    compiling: ModuleSeen | None = field(default=None, metadata=OMIT_NONE)
    last_compiled: ModuleSeen | None = field(default=None, metadata=OMIT_NONE)
    last_executed: ModuleSeen | None = field(default=None, metadata=OMIT_NONE)
    executions: int | None = field(default=None, metadata=OMIT_NONE)  # calls the observer saw (None: unknown)
    threads: int = 0
    error: str | None = None  # why its stacks could not be read


@dataclass(kw_only=True)
class StuckCapture:
    """Every process's stacks, captured before anything was stopped."""

    reason: str  # "timeout after 40 s", "no progress for 20 s (--stall)"
    trigger: str  # timeout | stall
    tool: str  # what read the stacks ("pystack 1.7.2"), or why nothing could
    folder: str = "stacks"  # relative to the bundle
    seconds: float = 0.0  # the capture's own time
    processes: list[StuckProcess] = field(default_factory=list)
    odd: list[int] = field(default_factory=list)  # pids of the odd ones out
    summary: str = ""  # one line: the odd one out, or where every process is


@dataclass(kw_only=True)
class ChildCrash:
    """A process the program started died by a fatal signal (the program itself did not): what its Python
    fault handler wrote to the run's stderr log (a run manifest's `child_crash`)."""

    signal: str  # SIGSEGV, SIGABRT, ...
    log: str  # the log it was found in, relative to the bundle
    traceback: list[str] = field(default_factory=list)  # the fault handler's lines (its Python stack)
