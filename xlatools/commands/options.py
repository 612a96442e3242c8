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

from xlatools.vocab import ExitCodeMode, PackMatch, Platform, PrecisionMode, SourceForm, choices

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


MAX_SECONDS = 365 * 24 * 3600  # a year: any wait the tools take a limit for is bounded by it


def _seconds(value: Optional[float]) -> Optional[float]:
    if value is not None and (math.isnan(value) or math.isinf(value) or value <= 0 or value > MAX_SECONDS):
        raise typer.BadParameter(
            f"{value:g}: expected a number of seconds more than 0 and at most {MAX_SECONDS} (a year), e.g. 600"
        )
    return value


JsonOption = Annotated[
    bool, typer.Option("--json", help="Machine-readable result on stdout (messages stay on stderr).")
]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the plan; run, write and change nothing.")]
QuietOption = Annotated[
    Optional[bool],
    typer.Option(
        "--quiet/--no-quiet",
        help="Only warnings, heartbeats and the result on the terminal; a program's own output "
        "only in the bundle's logs.",
    ),
]
PythonOption = Annotated[
    Optional[str],
    typer.Option(
        "--python",
        help="The target interpreter (a python, or a venv folder) whose jax/jaxlib, TensorFlow or torch_xla does the work.",
    ),
]
ProfileOption = Annotated[
    Optional[str], typer.Option("--profile", "-p", help="A profile: a name (`xlatools profiles list`) or a YAML file.")
]
DEFAULT_OUT = Path("artifacts")


def _out_root(value: Path) -> Path:
    """The default `artifacts` of a command run inside a bundle is that bundle's own folder of bundles, never a
    new artifacts/ inside the bundle (said on stderr)."""
    if value != DEFAULT_OUT:
        return value
    from xlatools.records.follow import enclosing_bundle

    bundle = enclosing_bundle(Path.cwd())
    if bundle is None:
        return value
    from xlatools import console

    console.info(
        f"inside the bundle {bundle}: new bundles go beside it, in {bundle.parent} (--out picks another folder)"
    )
    return bundle.parent


OutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        callback=_out_root,
        help="Root folder of the bundles; each invocation writes a fresh one, and `latest` points at the newest "
        "(run inside a bundle, the default is the folder that holds it).",
    ),
]
PlatformOption = Annotated[
    Optional[Platform],
    typer.Option("--platform", click_type=EnumChoice(Platform), help="auto (a GPU when there is one), cpu or gpu."),
]
XlaFlagOption = Annotated[
    List[str],
    typer.Option(
        "--xla-flag",
        help="An XLA flag, e.g. --xla-flag=--xla_dump_hlo_pass_re=.* (repeatable; checked against the target's jaxlib).",
    ),
]
TimeoutOption = Annotated[
    Optional[float], typer.Option("--timeout", callback=_seconds, help="Stop after this many seconds (exit 124).")
]
ExitCodeOption = Annotated[
    ExitCodeMode,
    typer.Option(
        "--exit-code",
        click_type=EnumChoice(ExitCodeMode),
        help="xlatools: any failure of the program exits 1 (its own status is "
        "in the summary and manifest); program: exit with the program's own status (128+N for signal N).",
    ),
]
SourceFormOption = Annotated[
    SourceForm,
    typer.Option(
        "--from",
        click_type=EnumChoice(SourceForm),
        help="Which dumped form of a module to compile: auto, text, proto, snapshot or mlir.",
    ),
]
PrecisionOption = Annotated[
    PrecisionMode,
    typer.Option(
        "--precision",
        click_type=EnumChoice(PrecisionMode),
        help="Dots/convolutions below full precision (TF32 on a GPU): "
        "auto (a test that differs from a reference runs again at full precision: `precision` when it then matches, exit 0), "
        "as-compiled (one comparison as compiled) or highest (the test at full precision only).",
    ),
]
PackMatchOption = Annotated[
    PackMatch,
    typer.Option(
        "--match",
        click_type=EnumChoice(PackMatch),
        help="What must equal the expected outcome: class (outcome per module), "
        "outputs (+ output digests) or fingerprint (+ optimised HLO).",
    ),
]
ProcessOption = Annotated[
    Optional[int],
    typer.Option(
        "--process",
        min=0,
        help="A multi-process run (run --processes N): read this process's dump (default 0); "
        "BUNDLE/xla_dump/pN names one too.",
    ),
]


def _old_module_flag(value):
    """`-m` once named an HLO module here; it means a Python module now (run, debug, bisect), so it is refused
    with the option to use instead, never taken for something else."""
    if value is None or value == []:
        return value
    from xlatools.errors import UsageError

    given = value[0] if isinstance(value, list) else value
    raise UsageError(
        f"-m {given}: -m names a Python module (as in `python -m`, for run, debug and bisect); "
        "an HLO module is chosen with --module",
        hint=f"use --module {given}",
    )


# The old short form of --module (an HLO module) in inspect, replay, reduce, diff, report and repro pack: hidden,
# it only says to use --module (typer would answer "No such option: -m").
OldModuleFlag = Annotated[Optional[List[str]], typer.Option("-m", hidden=True, callback=_old_module_flag)]


# Where the work runs (xlatools/cluster): run, bisect. A profile's cluster: section gives the defaults.
ExecutorOption = Annotated[
    Optional[str],
    typer.Option(
        "--executor",
        help="local (this machine) or slurm (a Slurm job per run or bisection step); default: the profile's "
        "cluster.executor, else local. See docs/cluster.md.",
    ),
]
PartitionOption = Annotated[
    Optional[str], typer.Option("--partition", help="With --executor slurm: sbatch --partition.")
]
AccountOption = Annotated[Optional[str], typer.Option("--account", help="With --executor slurm: sbatch --account.")]
TimeLimitOption = Annotated[
    Optional[str],
    typer.Option("--time-limit", help="With --executor slurm: sbatch --time of each job (minutes, or H:MM:SS)."),
]
SbatchOption = Annotated[
    List[str],
    typer.Option(
        "--sbatch-option",
        help="With --executor slurm: one more sbatch option, e.g. --sbatch-option=--qos=debug (repeatable).",
    ),
]


def executor_choice(executor, partition, account, time_limit, sbatch_options):
    """The command line's executor settings (cluster.spec.ExecutorChoice)."""
    from xlatools.cluster.spec import ExecutorChoice

    return ExecutorChoice(
        executor=executor,
        partition=partition,
        account=account,
        time=time_limit,
        sbatch_options=tuple(sbatch_options or ()),
    )


# What replay compares with, and on which inputs (replay, reduce, triage).
ReferenceOption = Annotated[
    List[str],
    typer.Option("--reference", help="Compare with a reference backend: cpu (the same interpreter's CPU backend)."),
]
ReferencePythonOption = Annotated[
    List[str],
    typer.Option(
        "--reference-python", help="Compare with the same module run by another interpreter (usually another jaxlib)."
    ),
]
AtolOption = Annotated[float, typer.Option("--atol", help="Absolute tolerance for floating-point outputs.")]
RtolOption = Annotated[float, typer.Option("--rtol", help="Relative tolerance for floating-point outputs.")]
InputsOption = Annotated[
    Optional[str],
    typer.Option("--inputs", help="random, zeros, ones or FILE.npz (default: the snapshot's arguments, else random)."),
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of random inputs.")]
NondeterministicOption = Annotated[
    bool,
    typer.Option(
        "--nondeterministic",
        help="GPU compiles without the deterministic mode's XLA flags (autotuning on; see docs/replay.md).",
    ),
]
DisablePassOption = Annotated[
    List[str],
    typer.Option(
        "--disable-pass", help="Disable an HLO pass by name in the test runs (repeatable; --xla_disable_hlo_passes)."
    ),
]


def followed_run(path: Path) -> Path:
    """A replay or reduce bundle stands for the run it was made from (said on stderr)."""
    from xlatools import console
    from xlatools.records.follow import follow_to_run

    followed = follow_to_run(path)
    if followed.note:
        console.info(followed.note)
    return followed.path
