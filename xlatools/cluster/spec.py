"""The executor settings of one command: a profile's `cluster:` section under the command line's
`--executor`/`--partition`/`--account`/`--time` (pure; no pydantic, the CLI imports this)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from xlatools.errors import UsageError

if TYPE_CHECKING:
    from xlatools.profiles.model import Cluster

EXECUTORS = ("local", "slurm")
TIME_OPTION = "--time-limit"  # the command line's name of sbatch's --time


@dataclass(frozen=True)
class ClusterSpec:
    """sbatch settings for every job a command submits (None: Slurm's default)."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None
    nodes: int | None = None
    gpus_per_task: int | None = None
    cpus_per_task: int | None = None
    sbatch_options: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    source: str = "defaults"  # where the settings came from (a profile's file, the command line)

    def describe(self) -> str:
        parts = [
            f"{name}={value}"
            for name, value in (
                ("partition", self.partition),
                ("account", self.account),
                ("time", self.time),
                ("nodes", self.nodes),
                ("gpus-per-task", self.gpus_per_task),
                ("cpus-per-task", self.cpus_per_task),
            )
            if value is not None
        ]
        return ", ".join(parts + list(self.sbatch_options)) or "Slurm's defaults"


@dataclass(frozen=True)
class ExecutorChoice:
    """The command line's part: --executor and the settings it may override."""

    executor: str | None = None
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    sbatch_options: tuple[str, ...] = field(default_factory=tuple)


def from_profile_section(section: Cluster, source: str) -> tuple[str, ClusterSpec]:
    """(executor, spec) from a validated profile's `cluster:` section."""
    spec = ClusterSpec(
        partition=section.partition,
        account=section.account,
        time=section.time,
        nodes=section.nodes,
        gpus_per_task=section.gpus_per_task,
        cpus_per_task=section.cpus_per_task,
        sbatch_options=tuple(section.sbatch_options),
        setup=tuple(section.setup),
        source=source,
    )
    return section.executor, spec


def settle(choice: ExecutorChoice, profile_executor: str, profile_spec: ClusterSpec) -> ClusterSpec | None:
    """The spec to run with, or None for the local executor. The command line wins over the profile."""
    executor = choice.executor or profile_executor
    if executor not in EXECUTORS:
        raise UsageError(f"--executor {executor!r}: not an executor", hint="use --executor local or --executor slurm")
    for option in choice.sbatch_options:  # each becomes one #SBATCH line of the job script
        if not option.startswith("--") or " " in option.split("=", 1)[0] or not option.isprintable():
            raise UsageError(f"--sbatch-option {option!r}: one sbatch option, e.g. --sbatch-option=--qos=debug")
    if executor == "local":
        given = [
            n
            for n, v in (("--partition", choice.partition), ("--account", choice.account), (TIME_OPTION, choice.time))
            if v is not None
        ] + (["--sbatch-option"] if choice.sbatch_options else [])
        if given:
            raise UsageError(
                f"{', '.join(given)} go with --executor slurm (this command runs locally)",
                hint="add --executor slurm, or a profile whose cluster: section says executor: slurm",
            )
        return None
    overrides: dict[str, str] = {
        k: v
        for k, v in (("partition", choice.partition), ("account", choice.account), ("time", choice.time))
        if v is not None
    }
    for name, value in overrides.items():
        if not value or any(c.isspace() for c in value) or not value.isprintable():
            option = TIME_OPTION if name == "time" else f"--{name}"  # the command line's names, not sbatch's
            raise UsageError(f"{option} {value!r}: one Slurm name or time, without spaces")
    spec = replace(
        profile_spec,
        **overrides,  # type: ignore[arg-type]  # each a str field of ClusterSpec
        sbatch_options=profile_spec.sbatch_options + tuple(choice.sbatch_options),
    )
    if overrides or choice.sbatch_options:
        spec = replace(spec, source=f"{profile_spec.source} + command line")
    return spec


def resolve(choice: ExecutorChoice, profile_ref: str | None) -> ClusterSpec | None:
    """settle() with the profile loaded (only when one is given)."""
    executor, spec = "local", ClusterSpec()
    if profile_ref:
        from xlatools.profiles import load

        resolved = load(profile_ref)
        executor, spec = from_profile_section(
            resolved.profile.cluster, f"profile {resolved.profile.name} ({resolved.path})"
        )
    return settle(choice, executor, spec)
