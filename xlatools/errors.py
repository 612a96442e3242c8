"""Error types. Each class carries the exit code the CLI turns it into.

Only `xlatools.cli.main` prints errors and exits; everything else raises.
Exit codes: 1 the program or build under our control failed, 2 bad input,
3 something the environment lacks, 124 timeout, 130 interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None, problems: list[Problem] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.problems = list(problems or [])


class UsageError(XlaToolsError):
    """Bad input: a flag, an argument, a file the user pointed us at."""

    exit_code = 2


class ProfileError(UsageError):
    """One or more problems in profile files; all of them are reported at once."""


class EnvironmentMissing(XlaToolsError):
    """A tool, engine or interpreter we need is not there."""

    exit_code = 3


class Interrupted(XlaToolsError):
    exit_code = 130


class TimedOut(XlaToolsError):
    exit_code = 124


class PinError(UsageError):
    """A pin that cannot be honoured as stated: digest mismatch, unsafe archive, unknown tree layout."""


class FetchError(EnvironmentMissing):
    """An archive or a ref could not be obtained: network down, every URL failed, offline with no cache."""


class VerifyFailed(XlaToolsError):
    """`pin verify` found disagreements; the check ran, the tree or archive does not match the lock."""

    exit_code = 1


class ContainerError(XlaToolsError):
    """The container engine refused something (image build, container start)."""

    exit_code = 1


class BuildFailed(XlaToolsError):
    """The build command ran and failed (exit 1, like any failure of what xlatools runs);
    the command's own status is kept in `build_status` and the build manifest."""

    exit_code = 1

    def __init__(self, message: str, build_status: int, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.build_status = build_status
