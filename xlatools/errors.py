"""Error types and exit codes. Each error class carries the exit code the CLI turns it into.

Only `xlatools.cli.main` prints errors and exits; everything else raises.
Exit codes: 0 ok, 1 the program or build under our control failed, 2 bad input,
3 something the environment lacks (xlatools cannot run), 70 a bug in xlatools itself (EX_SOFTWARE of
sysexits.h; never 1, which `repro run` reads as "reproduced"), 124 timeout, 130 interrupted;
`repro run` also answers 5: the pack records no failure, so there is nothing to reproduce.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlatools.vocab import Status

# What compiling a user's regular expression can raise: a syntax error, a repeat count over the limit
# (`a{99999999999}`), nesting deeper than the parser recurses.
REGEX_ERRORS = (re.error, OverflowError, RecursionError)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MISSING = 3
EXIT_INTERNAL = 70  # an exception no error class names: cli.main writes a crash log (crashlog.py)
EXIT_NOTHING_TO_REPRODUCE = 5  # `repro run` of a pack that records no failure (5: apart from every other answer)
EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130

# The exit code of a finished bundle, by its status (an `error` bundle may carry the exit code of
# the error that stopped it instead: 2 for input found bad midway, 3 otherwise).
STATUS_EXIT: dict[Status, int] = {
    Status.OK: EXIT_OK,
    Status.FAILED: EXIT_FAILED,
    Status.TIMEOUT: EXIT_TIMEOUT,
    Status.INTERRUPTED: EXIT_INTERRUPTED,
    Status.ERROR: EXIT_MISSING,
}


def exit_code_for(status: Status | str) -> int:
    return STATUS_EXIT[Status(status)]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, located as precisely as we can."""

    message: str
    file: str | None = None
    line: int | None = None
    key: str | None = None  # dotted key path, e.g. "bazel.compilation_mode"
    hint: str | None = None

    def where(self) -> str:
        place = self.file or ""
        if self.file and self.line:
            place += f":{self.line}"
        if self.key:
            place = f"{place} [{self.key}]" if place else f"[{self.key}]"
        return place

    def render(self) -> str:
        where = self.where()
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class XlaToolsError(Exception):
    exit_code = EXIT_FAILED
    # True when the command already printed its --json result, which says what failed: then
    # cli.main prints no JSON error after it (stdout stays one JSON document).
    reported_json = False
    # True for a write that failed for want of space (a full disk, a quota): work files the command made can go.
    disk_full = False

    def __init__(self, message: str, *, hint: str | None = None, problems: list[Problem] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.problems = list(problems or [])


class UsageError(XlaToolsError):
    """Bad input: a flag, an argument, a file the user pointed us at."""

    exit_code = EXIT_USAGE


class ProfileError(UsageError):
    """One or more problems in profile files; all of them are reported at once."""


class EnvironmentMissing(XlaToolsError):
    """A tool, engine or interpreter we need is not there: xlatools cannot run."""

    exit_code = EXIT_MISSING


class TextNotTheRunsModule(EnvironmentMissing):
    """reduce and isolate edit HLO text; a module whose text compiles another module than the run's cannot be
    reduced or isolated (the difference is lost in the text). `stablehlo`: the module's StableHLO file, which
    compiles the run's own module (the smallest form that still reproduces), when the dump has one."""

    def __init__(self, message: str, *, stablehlo: str | None = None, differs: str = "", hint: str | None = None):
        super().__init__(message, hint=hint)
        self.stablehlo, self.differs = stablehlo, differs  # differs: how the text's compiled module is not the run's


class Interrupted(XlaToolsError):
    exit_code = EXIT_INTERRUPTED


class TimedOut(XlaToolsError):
    exit_code = EXIT_TIMEOUT


class PinError(UsageError):
    """A pin that cannot be honoured as stated: digest mismatch, unsafe archive, unknown tree layout."""


class FetchError(EnvironmentMissing):
    """An archive or a ref could not be obtained: network down, every URL failed, offline with no cache."""


class VerifyFailed(XlaToolsError):
    """`pin verify` found disagreements; the check ran, the tree or archive does not match the lock."""

    exit_code = EXIT_FAILED


class ContainerError(XlaToolsError):
    """The container engine refused something (image build, container start)."""

    exit_code = EXIT_FAILED


class BuildFailed(XlaToolsError):
    """The build command ran and failed (exit 1, like any failure of what xlatools runs);
    the command's own status is kept in `build_status` and the build manifest."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, build_status: int, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.build_status = build_status
