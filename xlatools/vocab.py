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
    REDUCE = "reduce"
    DEBUG = "debug"


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
    """What replaying one module found. `precision`: the test differed from a reference as compiled and
    matches it with every dot and convolution raised to full precision (the program's precision setting,
    not a compiler bug; xlatools/replay/precision.py). The last five are not about the module: `cannot-run`
    (xlatools could not load, convert or compile it for reasons of its own), `input-error`
    (the given inputs do not fit), `timeout`, `interrupted`, and `skipped` (a module replay
    refuses by design: one compiled for several devices; listed with the reason, no verdict)."""

    OK = "ok"
    MISMATCH = "mismatch"
    PRECISION = "precision"
    COMPILE_ERROR = "compile-error"
    RUNTIME_ERROR = "runtime-error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    INPUT_ERROR = "input-error"
    CANNOT_RUN = "cannot-run"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"


class PrecisionMode(StrEnum):
    """`--precision`: how replay treats dots and convolutions below full precision (TF32 on a GPU).
    `auto`: as compiled, and again at full precision when that differs from a reference;
    `as-compiled`: as compiled only; `highest`: at full precision only."""

    AUTO = "auto"
    AS_COMPILED = "as-compiled"
    HIGHEST = "highest"


class ReproOutcome(StrEnum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not-reproduced"
    CANNOT_RUN = "cannot-run"
    NOTHING_TO_REPRODUCE = "nothing-to-reproduce"  # the pack records no failure (every module ran ok)


class OracleKind(StrEnum):
    """What makes a candidate module interesting to `xlatools reduce` (docs/reduce.md)."""

    MISMATCH = "mismatch"  # the test's outputs differ from a reference's
    RECORDED = "recorded"  # the test's outputs differ from the result a snapshot recorded
    ERROR = "error"  # the test fails with a message matching --error
    SCRIPT = "script"  # --script exits 1-127 (git bisect run's convention)
    CRASH = "crash"  # the test dies as the original did: the same signal (or compiler error) in the same phase


class Interest(StrEnum):
    """An oracle's verdict on one candidate. `skip`: it cannot tell (a reference that cannot run
    the candidate, a script answering 125), never counted as interesting."""

    INTERESTING = "interesting"
    NOT_INTERESTING = "not-interesting"
    SKIP = "skip"


class ReduceStrategy(StrEnum):
    FULL = "full"
    DDMIN = "ddmin"  # delta debugging alone (the benchmark's baseline)


class IsolationOutcome(StrEnum):
    """One instruction of `replay --isolate`, run alone against the reference."""

    MATCH = "match"
    MISMATCH = "mismatch"
    FAILED = "failed"  # the test or the reference could not run it alone
    SKIPPED = "skipped"  # a tuple-shaped value or operand: not run alone


class TriageStage(StrEnum):
    """The stages of `xlatools triage`, in the order they run (docs/triage.md)."""

    RELEASES = "releases"  # bisect releases: last good and first bad
    DUMPS = "dumps"  # a dumping run on each of them
    DIFF = "diff"  # the two runs compared; first-bad's modules replayed against last-good
    PASSES = "passes"  # bisect passes on first-bad
    REDUCE = "reduce"  # the module that differs, reduced (mismatch against last-good)
    ISOLATE = "isolate"  # its instructions one by one against last-good
    REPORT = "report"  # ISSUE.md with every finding linked


class StageStatus(StrEnum):
    """A triage stage. `cannot-run`: it could not do its part (the reason says why); `blocked`: a stage it
    needs has no finding; `failed`: it ran and what it found is not to be trusted (a flaky result)."""

    PENDING = "pending"
    DONE = "done"
    SKIPPED = "skipped"
    FAILED = "failed"
    CANNOT_RUN = "cannot-run"
    BLOCKED = "blocked"


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
