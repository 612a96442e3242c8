"""One definition of each option several commands share, the choice types, and the invocation.

A command declares `as_json: JsonOption = False`; the name, help and checks live here once.
Defaults stay in the command's signature, where the reader of that command looks for them.
Choices are StrEnums (xlatools.vocab) parsed by `EnumChoice`, whose error keeps our wording
("Invalid value for '--platform': tpu: expected auto, cpu or gpu") and exits 2 like every usage error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from xlatools.vocab import ExitCodeMode, PackMatch, Platform, SourceForm, choices

try:  # typer >= 0.2x ships its own copy of click (without click's Choice)
    from typer._click.globals import get_current_context
    from typer._click.types import ParamType
except ImportError:  # pragma: no cover - older typer with the click package
    from click import ParamType, get_current_context


class EnumChoice(ParamType):
    """A choice of a StrEnum's values (any case) that converts to the enum member."""

    def __init__(self, enum: type[StrEnum]):
        self.enum = enum
        self.name = enum.__name__.lower()

    def get_metavar(self, *args, **kwargs) -> str:  # the signature changed between click versions
        return "[" + "|".join(member.value for member in self.enum) + "]"

    def convert(self, value, param, ctx):
        if isinstance(value, self.enum):
            return value
        try:
            return self.enum(str(value).lower())
        except ValueError:
            self.fail(f"{value}: expected {choices(self.enum)}", param, ctx)


@dataclass(frozen=True)
class Invocation:
    """What the CLI was given: commands record it (manifests' `command` and `argv`)."""

    argv: list[str] = field(default_factory=list)


def invocation() -> Invocation:
    """The command line of the running command, as `xlatools.cli.main` received it."""
    context = get_current_context(silent=True)
    obj = context.find_root().obj if context is not None else None
    return obj if isinstance(obj, Invocation) else Invocation()


def _seconds(value: Optional[float]) -> Optional[float]:
    if value is not None and (math.isnan(value) or math.isinf(value) or value <= 0):
        raise typer.BadParameter(f"{value:g}: expected a number of seconds more than 0 (e.g. 600)")
    return value


JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable result on stdout (messages stay on stderr).")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the plan; run, write and change nothing.")]
QuietOption = Annotated[Optional[bool], typer.Option(
    "--quiet/--no-quiet", help="Only warnings, heartbeats and the result on the terminal; a program's own output "
    "only in the bundle's logs.")]
PythonOption = Annotated[Optional[str], typer.Option(
    "--python", help="The target interpreter (a python, or a venv folder) whose jax/jaxlib, TensorFlow or torch_xla does the work.")]
ProfileOption = Annotated[Optional[str], typer.Option("--profile", "-p", help="A profile: a name (`xlatools profiles list`) or a YAML file.")]
OutOption = Annotated[Path, typer.Option(
    "--out", help="Root folder of the bundles; each invocation writes a fresh one, and `latest` points at the newest.")]
PlatformOption = Annotated[Optional[Platform], typer.Option(
    "--platform", click_type=EnumChoice(Platform), help="auto (a GPU when there is one), cpu or gpu.")]
XlaFlagOption = Annotated[List[str], typer.Option(
    "--xla-flag", help="An XLA flag, e.g. --xla-flag=--xla_dump_hlo_pass_re=.* (repeatable; checked against the target's jaxlib).")]
TimeoutOption = Annotated[Optional[float], typer.Option(
    "--timeout", callback=_seconds, help="Stop after this many seconds (exit 124).")]
ExitCodeOption = Annotated[ExitCodeMode, typer.Option(
    "--exit-code", click_type=EnumChoice(ExitCodeMode), help="xlatools: any failure of the program exits 1 (its own status is "
    "in the summary and manifest); program: exit with the program's own status (128+N for signal N).")]
SourceFormOption = Annotated[SourceForm, typer.Option(
    "--from", click_type=EnumChoice(SourceForm), help="Which dumped form of a module to compile: auto, text, proto, snapshot or mlir.")]
PackMatchOption = Annotated[PackMatch, typer.Option(
    "--match", click_type=EnumChoice(PackMatch), help="What must equal the expected outcome: class (outcome per module), "
    "outputs (+ output digests) or fingerprint (+ optimised HLO).")]
ProcessOption = Annotated[Optional[int], typer.Option(
    "--process", min=0, help="A multi-process run (run --processes N): read this process's dump (default 0); "
                             "BUNDLE/xla_dump/pN names one too.")]
