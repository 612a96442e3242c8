"""Plan a replay (pure): request + modules + target facts -> ReplayPlan.

Runs: `test` (the module as asked: --python, --platform, --xla-flag, --disable-pass,
--no-opt, --dump), then each reference: `reference-cpu` (the same interpreter on the
CPU backend) and `reference-python-N` (another interpreter, usually another jaxlib; named by its jax version,
`reference-jax-0.6.1`, once probed: label_references).
References run with jaxlib's defaults plus --reference-xla-flag, on the test's inputs,
and their outputs are the expected values for the test's outputs.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.replay import DEFAULT_TOLERANCE, PlannedModule, PlannedRun, PlanRecord, ReplayRequest
from xlatools.replay.sources import ModuleSource
from xlatools.run.env import FlagLayers, Layer, Source
from xlatools.run.frontends import jax_gpu_platforms
from xlatools.run.flags import join_flags, validate_flag
from xlatools.vocab import Platform, SourceForm, choices

__all__ = ["DEFAULT_TOLERANCE", "INPUT_MODES", "REFERENCES", "ReplayPlan", "ReplayRequest", "RunConfig", "plan_replay"]

INPUT_MODES = ("random", "zeros", "ones")
REFERENCES = ("cpu",)


@dataclass(kw_only=True)
class RunConfig(PlannedRun):
    """A planned target run, and the environment it runs in."""

    def env(self, caller: dict[str, str], gpu_platform: str, dump_dir: str | None) -> dict[str, str]:
        env = {**caller, **self.extra_env}
        flags = list(self.xla_flags) + ([f"--xla_dump_to={dump_dir}"] if dump_dir else [])
        env.pop("XLA_FLAGS", None)
        if flags:
            env["XLA_FLAGS"] = join_flags(flags)
        if self.platform == Platform.CPU:
            env["JAX_PLATFORMS"] = "cpu"
        elif self.platform == Platform.GPU:
            env["JAX_PLATFORMS"] = jax_gpu_platforms(gpu_platform)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        return env


@dataclass
class ReplayPlan:
    request: ReplayRequest
    source_kind: str  # file, dump, bundle or pack
    modules: list[ModuleSource]
    runs: list[RunConfig]
    dumps: bool
    name: str
    notes: list[str]

    @property
    def test(self) -> RunConfig:
        return self.runs[0]

    def record(self) -> PlanRecord:
        """The plan as the manifest (and `--dry-run --json`) shows it."""
        return PlanRecord(
            request=self.request,
            source_kind=self.source_kind,
            name=self.name,
            notes=list(self.notes),
            modules=[PlannedModule(name=m.name, id=m.id, files=m.files()) for m in self.modules],
            runs=list(self.runs),
        )


def _is(value: object, enum) -> bool:
    return str(value) in {member.value for member in enum}


def _check(request: ReplayRequest) -> None:
    if not _is(request.source_from, SourceForm):
        raise UsageError(f"--from {request.source_from}: expected {choices(SourceForm)}")
    if not _is(request.platform, Platform):
        raise UsageError(f"--platform {request.platform}: expected {choices(Platform)}")
    if request.iterations < 1:
        raise UsageError(f"--iterations {request.iterations}: must be 1 or more")
    for option, value in (("--atol", request.atol), ("--rtol", request.rtol)):
        if not 0 <= value < math.inf:  # also nan: every comparison with it is false
            raise UsageError(f"{option} {value}: must be a finite number, 0 or more", hint=f"e.g. {option} 1e-3")
    if request.timeout is not None and not 0 < request.timeout < math.inf:
        raise UsageError(f"--timeout {request.timeout}: must be a finite number of seconds, more than 0")
    if not 0 <= request.seed < 2**32:
        raise UsageError(f"--seed {request.seed}: must be 0 to 2**32-1 (numpy's seeds)")
    for reference in request.references:
        if reference not in REFERENCES:
            raise UsageError(
                f"--reference {reference}: expected {' or '.join(REFERENCES)}",
                hint="another interpreter is --reference-python PATH",
            )
    mode = request.inputs
    if mode is not None and mode not in INPUT_MODES and not (mode.endswith(".npz") and Path(mode).is_file()):
        raise UsageError(f"--inputs {mode}: expected random, zeros, ones or an existing .npz file")
    if mode is not None and mode not in INPUT_MODES:
        from xlatools.replay.npz import check_npz

        check_npz(Path(mode), "--inputs")


def test_flags(request: ReplayRequest, dump_flags: list[tuple[str, str]]) -> FlagLayers:
    layers = FlagLayers()
    for flag, source in dump_flags:
        layers.add([flag], Source(Layer.PRESET, source))
    command_line = Source(Layer.COMMAND_LINE, "--xla-flag")
    layers.add([validate_flag(f, "--xla-flag") for f in request.xla_flags], command_line)
    if request.disable_passes:
        layers.add(
            [f"--xla_disable_hlo_passes={','.join(request.disable_passes)}"],
            Source(Layer.COMMAND_LINE, "--disable-pass"),
        )
    if request.no_opt:
        layers.add(["--xla_backend_optimization_level=0"], Source(Layer.COMMAND_LINE, "--no-opt"))
    return layers


def label_references(runs: list[RunConfig], versions: dict[str, str]) -> None:
    """Name each --reference-python run by what it runs, once probed (`versions`: python -> its jax version):
    `reference-jax-0.6.1`, not `reference-python-1`; a second reference of one version gets `-2`."""
    taken = {run.label for run in runs}
    for run in runs:
        version = versions.get(run.python)
        if not run.label.startswith("reference-python-") or not version:
            continue
        label, n = f"reference-jax-{version}", 2
        while label in taken:
            label, n = f"reference-jax-{version}-{n}", n + 1
        taken.discard(run.label)
        taken.add(label)
        run.label = label


def plan_replay(
    request: ReplayRequest, source_kind: str, modules: list[ModuleSource], dump_flags: list[tuple[str, str]] = ()
) -> ReplayPlan:
    """`dump_flags`: (flag, preset) of the --dump presets (xlatools adds --xla_dump_to per run)."""
    _check(request)
    notes = []
    layers = test_flags(request, list(dump_flags))
    platform = Platform(request.platform)
    runs = [
        RunConfig(
            label="test",
            role="test",
            python=request.python,
            platform=platform,
            xla_flags=layers.final(),
            flag_sources=layers.sources(),
            extra_env=dict(request.env),
        )
    ]
    ref_flags = [validate_flag(f, "--reference-xla-flag") for f in request.reference_xla_flags]
    ref_sources = {f: "--reference-xla-flag" for f in ref_flags}
    if "cpu" in request.references:
        if platform == Platform.CPU:
            notes.append("--reference cpu with --platform cpu: both runs use the CPU backend")
        runs.append(
            RunConfig(
                label="reference-cpu",
                role="reference",
                python=request.python,
                platform=Platform.CPU,
                xla_flags=ref_flags,
                flag_sources=ref_sources,
                extra_env=dict(request.env),
            )
        )
    for i, python in enumerate(request.reference_pythons, 1):
        runs.append(
            RunConfig(
                label=f"reference-python-{i}",
                role="reference",
                python=python,
                platform=platform,
                xla_flags=ref_flags,
                flag_sources=ref_sources,
                extra_env=dict(request.env),
            )
        )
    if request.source_from == SourceForm.SNAPSHOT and not any(m.snapshot for m in modules):
        raise UsageError("--from snapshot: no module here has a snapshot", hint="dump with --preset dump:snapshots")
    # The name of what `latest` pointed at, not "latest" (os.path.realpath: a pure function of the path here).
    stem = (
        request.name
        or (modules[0].name if len(modules) == 1 else Path(os.path.realpath(request.source)).name)
        or "replay"
    )
    return ReplayPlan(request, source_kind, modules, runs, bool(dump_flags), f"replay-{stem}", notes)
