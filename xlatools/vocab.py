"""The words every capability shares: bundle statuses, outcomes, choices of the command line.

StrEnums, so a member is also its plain string: it serialises to JSON as itself, compares
equal to the string in records written before these types existed, and reads back from
JSON through the records' validation. Imports nothing (the run path pays for this module).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """A bundle's status. `error`: xlatools could not do its part (cannot run, records not
    writable); `failed`: what xlatools ran or checked failed (the program, the build)."""

    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    ERROR = "error"


class BundleKind(StrEnum):
    RUN = "run"
    BUILD = "build"
    REPLAY = "replay"
    BISECT = "bisect"


class ProcessStatus(StrEnum):
    """One process of a multi-process run. `stopped`: xlatools ended it because another process
    failed first; `timeout`/`interrupted`: it was still running when the run's timeout or Ctrl-C came."""

    OK = "ok"
    FAILED = "failed"
    STOPPED = "stopped"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    ERROR = "error"


class ReplayOutcome(StrEnum):
    """What replaying one module found. The last four are not about the module: `cannot-run`
    (xlatools could not load, convert or compile it for reasons of its own), `input-error`
    (the given inputs do not fit), `timeout`, `interrupted`."""

    OK = "ok"
    MISMATCH = "mismatch"
    COMPILE_ERROR = "compile-error"
    RUNTIME_ERROR = "runtime-error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    INPUT_ERROR = "input-error"
    CANNOT_RUN = "cannot-run"
    INTERRUPTED = "interrupted"


class ReproOutcome(StrEnum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not-reproduced"
    CANNOT_RUN = "cannot-run"


class StepOutcome(StrEnum):
    """A bisection step: skip is never counted as good or bad (cannot install, build or run)."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


class BisectStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    STOPPED = "stopped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # by Ctrl-C or SIGTERM; like every status but done, it resumes


class CheckStatus(StrEnum):
    """A doctor check."""

    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


class Platform(StrEnum):
    AUTO = "auto"
    CPU = "cpu"
    GPU = "gpu"


class ExitCodeMode(StrEnum):
    """xlatools: any failure of the program exits 1; program: the program's own status."""

    XLATOOLS = "xlatools"
    PROGRAM = "program"


class SourceForm(StrEnum):
    """Which dumped form of a module a replay compiles."""

    AUTO = "auto"
    TEXT = "text"
    PROTO = "proto"
    SNAPSHOT = "snapshot"
    MLIR = "mlir"


class PackMatch(StrEnum):
    """What must equal a pack's expected outcome for `repro run` to say "reproduced"."""

    CLASS = "class"
    OUTPUTS = "outputs"
    FINGERPRINT = "fingerprint"


class IrFormat(StrEnum):
    """What `xlatools lower` writes."""

    HLO = "hlo"
    STABLEHLO = "stablehlo"
    JAXPR = "jaxpr"


def choices(enum: type[StrEnum]) -> str:
    """`auto, cpu or gpu`: an enum's values as a message lists them."""
    values = [member.value for member in enum]
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"
