"""Plan a run: program + presets + profile + CLI switches -> RunPlan.

No processes, no writes (program.parse_program only checks that a script exists); `xlatools run --dry-run` prints
the same RunPlan that execute.py runs. Paths inside the bundle are written `{bundle}/...` and bound once the bundle
exists. Environment precedence is env.Layer's: the caller's environment < presets (in the order given) < the
profile's `run:` section < command line < xlatools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from xlatools.errors import UsageError
from xlatools.records.metrics import DEFAULT_MEASURE_CALLS
from xlatools.records.run import ProfileRun
from xlatools.run.env import MAX_VLOG, EnvBuilder, EnvChange, Layer, Override, Source, parse_vmodule, split_assignment
from xlatools.run.flags import join_flags, validate_flag
from xlatools.run.frontends import TF_XLA_FLAGS, Frontend, platform_env
from xlatools.run.dumping import dump_into_bundle
from xlatools.run.multiprocess import ProcessPlan, plan_group
from xlatools.run.presets.catalog import Catalog, Preset
from xlatools.run.program import SMOKE_DIR, Program
from xlatools.vocab import Platform

BUNDLE = "{bundle}"
SMOKE_HOST_DEVICES = 4  # CPU devices for `collectives`, via --xla_force_host_platform_device_count
_LOG_VARS = ("TF_CPP_MAX_VLOG_LEVEL", "TF_CPP_VMODULE")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class RunRequest:
    """Everything the user asked for, already split into lists (from the CLI and the profile)."""

    program: Program
    python: str | None  # the interpreter as asked for; execute.prepare resolves it to a path
    dump: bool = False
    presets: list[str] = field(default_factory=list)
    xla_flags: list[str] = field(default_factory=list)
    vmodule: list[str] = field(default_factory=list)
    vlog: int | None = None
    env: list[str] = field(default_factory=list)
    platform: Platform | None = None
    timeout: float | None = None
    name: str | None = None
    quiet: bool | None = None  # None: quiet when the run asks for VLOG output (thousands of lines)
    frontend: str | None = None  # None: the profile's, else detected
    processes: int | None = None  # None: 1, or 2 for smoke:multiprocess (run/multiprocess.py)
    devices_per_process: int = 1
    record_inputs: bool = False  # record each module's arguments and results (run/recorder.py)
    measure_calls: int | None = DEFAULT_MEASURE_CALLS  # calls timed per executable (run/observer.py); None: no metrics
    stall: float | None = None  # stop (as a timeout) when nothing moved this long; stacks first (run/hang/)
    explain_recompiles: bool = False  # the observer prints each recompile as it happens (docs/cache.md)


@dataclass
class RunPlan:
    program: Program
    python: str
    jaxlib: str | None
    argv: list[str]
    cwd: str
    env_changes: list[EnvChange]
    xla_flags: list[str]
    xla_flag_sources: dict[str, str]
    overridden_flags: list[Override]
    presets: list[Preset]
    dump_dir: str | None
    platform: Platform
    timeout: float | None
    name: str
    copy_files: list[str]
    notes: list[str]
    profile: ProfileRun | None
    quiet: bool = False  # the program's output goes only to the bundle's logs; a heartbeat line instead
    frontend: Frontend = "jax"
    tf_xla_flags: list[str] = field(default_factory=list)  # TensorFlow's own flags, merged like XLA_FLAGS
    tf_xla_flag_sources: dict[str, str] = field(default_factory=dict)
    processes: list[ProcessPlan] = field(default_factory=list)  # empty: one process (argv, env above)
    record_inputs: bool = False  # asked for; run/recorder.py also records where snapshots are asked and not written
    measure_calls: int | None = DEFAULT_MEASURE_CALLS  # the observer's budget (run/observer.py); None: not observed
    stall: float | None = None  # --stall: no output and no observer event this long ends the run (run/hang/)
    explain_recompiles: bool = False  # --explain-recompiles: the observer prints each recompile (docs/cache.md)

    def vmodule_patterns(self) -> list[str]:
        """The TF_CPP_VMODULE patterns the program gets (file-name globs)."""
        value = next((c.value for c in self.env_changes if c.name == "TF_CPP_VMODULE" and c.value), "")
        return [item.split("=", 1)[0] for item in value.split(",") if "=" in item]

    def child_env(self, caller: dict[str, str]) -> dict[str, str]:
        env = dict(caller)
        for change in self.env_changes:
            if change.value is None:
                env.pop(change.name, None)
            else:
                env[change.name] = change.value
        return env

    def bind(self, bundle: Path) -> "RunPlan":
        """The same plan with `{bundle}` replaced by the real bundle directory."""

        def sub(value):
            return value.replace(BUNDLE, str(bundle)) if isinstance(value, str) else value

        flags = [sub(f) for f in self.xla_flags]
        tf_flags = [sub(f) for f in self.tf_xla_flags]
        joined = {"XLA_FLAGS": join_flags(flags), TF_XLA_FLAGS: join_flags(tf_flags)}
        # Flag variables are joined again, not substituted: a bundle path with a space must be quoted.
        return replace(
            self,
            argv=[sub(a) for a in self.argv],
            env_changes=[
                replace(c, value=joined[c.name] if c.name in joined and c.value else sub(c.value))
                for c in self.env_changes
            ],
            xla_flags=flags,
            tf_xla_flags=tf_flags,
            xla_flag_sources={sub(k): v for k, v in self.xla_flag_sources.items()},
            dump_dir=sub(self.dump_dir),
            processes=[p.bind(str(bundle)) for p in self.processes],
        )

    def to_json(self) -> dict[str, Any]:  # the plan as `run --dry-run --json` prints it (JSON at the edge)
        from xlatools.records.base import to_json

        data = {f.name: to_json(getattr(self, f.name)) for f in fields(self)}
        data.update(
            program=to_json(self.program.record()),
            env_changes=to_json([c.record() for c in self.env_changes]),
            overridden_flags=to_json([o.record() for o in self.overridden_flags]),
            presets=to_json([p.ref() for p in self.presets]),
        )
        return data


def settle_request(request: RunRequest, profile: "ProfileRun") -> RunRequest:
    """The one place where "command line > profile > default" is decided for a run."""
    return replace(
        request,
        python=request.python or profile.python,
        platform=request.platform or profile.platform or Platform.AUTO,
        timeout=request.timeout if request.timeout is not None else profile.timeout,
    )


def _check_version(preset: Preset, jaxlib: str | None) -> None:
    from packaging.version import InvalidVersion, Version

    low, high = preset.min_jaxlib, preset.max_jaxlib
    if not jaxlib or not (low or high):
        return
    try:
        version = Version(jaxlib)
        too_old = low is not None and version < Version(low)
        too_new = high is not None and version > Version(high)
    except InvalidVersion:
        return
    if too_old or too_new:
        need = f">= {low}" if too_old else f"<= {high}"
        raise UsageError(
            f"preset '{preset.name}' needs jaxlib {need}; the target has jaxlib {jaxlib}",
            hint="pick another preset, or another --python",
        )


def _choose_presets(request: RunRequest, profile: ProfileRun, catalog: Catalog, jaxlib: str | None) -> list[Preset]:
    """The profile's presets, then --dump's, then --preset's, each once, in that order."""
    wanted = [catalog.get(ref) for ref in profile.presets]
    if request.dump:
        wanted.append(catalog.get(profile.dump_preset, kind="dump"))
    wanted += [catalog.get(ref) for ref in request.presets]
    chosen = list({(p.kind, p.name): p for p in wanted}.values())  # first mention wins the order
    for preset in chosen:
        _check_version(preset, jaxlib)
    return chosen


def _add_layers(env: EnvBuilder, request: RunRequest, profile: ProfileRun, presets: list[Preset]) -> None:
    """Presets, the profile's run section and the command line's switches, each with its Source."""
    for preset in presets:
        source = Source(Layer.PRESET, f"preset {preset.name}")
        for name, value in preset.env.items():
            env.set(name, value, source)
        env.flags.add(list(preset.xla_flags), source)
        env.add_vmodule(preset.vmodule, source)
    from_profile = Source(Layer.PROFILE, f"profile {profile.name}" if profile.name else "profile")
    for name, value in profile.env.items():
        env.set(name, value, from_profile)
    env.flags.add([validate_flag(f, str(from_profile)) for f in profile.xla_flags], from_profile)
    for item in request.env:
        name, value = split_assignment(item, "--env")
        if not _ENV_NAME.fullmatch(name):
            raise UsageError(
                f"--env {item!r}: {name!r} is not a variable name",
                hint="letters, digits and _, not starting with a digit, e.g. JAX_TRACEBACK_FILTERING=off",
            )
        env.set(name, value, Source(Layer.COMMAND_LINE, "--env"))
    env.flags.add([validate_flag(f, "--xla-flag") for f in request.xla_flags], Source(Layer.COMMAND_LINE, "--xla-flag"))
    for item in request.vmodule:
        if not item.strip():
            raise UsageError("--vmodule '': needs FILE=N", hint="e.g. --vmodule hlo_pass_pipeline=1")
        env.add_vmodule(parse_vmodule(item, "--vmodule"), Source(Layer.COMMAND_LINE, "--vmodule"))
    if request.vlog is not None:
        if not 0 <= request.vlog <= MAX_VLOG:
            raise UsageError(f"--vlog {request.vlog}: must be 0 or more, at most {MAX_VLOG}")
        env.set("TF_CPP_MAX_VLOG_LEVEL", str(request.vlog), Source(Layer.COMMAND_LINE, "--vlog"))


def _unhide_vlog(env: EnvBuilder, notes: list[str]) -> None:
    """jax hides INFO (and so every VLOG line) unless TF_CPP_MIN_LOG_LEVEL=0."""
    wants_log = bool(env.vmodule) or any(env.get(v)[0] not in (None, "0") for v in _LOG_VARS)
    level, source = env.get("TF_CPP_MIN_LOG_LEVEL")
    if not wants_log or level == "0":
        return
    if source is not None and source.layer == Layer.COMMAND_LINE:
        notes.append("TF_CPP_MIN_LOG_LEVEL set by --env is not 0: VLOG/vmodule lines will not show")
    else:
        env.set("TF_CPP_MIN_LOG_LEVEL", "0", Source(Layer.XLATOOLS, "needed for VLOG/vmodule output"))


def _program_argv(request: RunRequest, env: EnvBuilder, on_gpu: bool) -> tuple[list[str], list[str]]:
    """The program's argv and the files to copy into the bundle. Only CPU runs get CPU devices made up."""
    program, python = request.program, request.python
    if program.kind == "module":
        return [python, "-m", program.name, *program.args], []
    if program.kind == "script":
        return [python, program.name, *program.args], [program.name]
    if (
        "collectives" in program.name.split(",")
        and not on_gpu
        and "xla_force_host_platform_device_count" not in env.flags.flags
    ):
        env.flags.add(
            [f"--xla_force_host_platform_device_count={SMOKE_HOST_DEVICES}"],
            Source(Layer.XLATOOLS, "smoke:collectives (CPU devices)"),
        )
    argv = [
        python,
        str(SMOKE_DIR / "main.py"),
        "--result",
        f"{BUNDLE}/smoke_results.json",
        *program.name.split(","),
        *program.args,
    ]
    return argv, sorted(str(p) for p in SMOKE_DIR.glob("*.py"))


def plan_run(
    request: RunRequest,
    profile: ProfileRun,
    catalog: Catalog,
    caller_env: dict[str, str],
    cwd: Path,
    jaxlib: str | None = None,
    gpu_platform: str = "cuda",
    frontend: Frontend = "jax",
    on_gpu: bool = False,
) -> RunPlan:
    """The whole run as data. `request` comes settled (settle_request) with the interpreter resolved.
    `on_gpu`: the program will run on GPUs (--platform gpu, or auto on a target that has one)."""
    env = EnvBuilder(caller_env)
    notes: list[str] = []
    presets = _choose_presets(request, profile, catalog, jaxlib)
    _add_layers(env, request, profile, presets)
    _unhide_vlog(env, notes)
    dump_dir = dump_into_bundle(env, caller_env, notes, frontend, jaxlib)
    platform = Platform(request.platform or Platform.AUTO)
    for name, value in platform_env(frontend, platform, gpu_platform).items():
        env.set(name, value, Source(Layer.COMMAND_LINE, f"--platform {platform}"))
    if "PYTHONFAULTHANDLER" not in caller_env:  # a crash leaves a Python stack in stderr.log
        env.set("PYTHONFAULTHANDLER", "1", Source(Layer.XLATOOLS, "xlatools (crash stacks in stderr.log)"))
    argv, copy_files = _program_argv(request, env, on_gpu or platform == Platform.GPU)
    for option, seconds in (("--timeout", request.timeout), ("--stall", request.stall)):
        if seconds is not None and seconds <= 0:
            raise UsageError(f"{option} {seconds:g}: must be more than 0 seconds", hint=f"e.g. {option} 300")
    changes, flags = env.changes(), env.flags.final()
    processes = plan_group(
        request.processes,
        request.devices_per_process,
        request.program,
        frontend,
        argv,
        changes,
        flags,
        caller_env,
        notes,
    )
    return RunPlan(
        program=request.program,
        python=request.python,
        jaxlib=jaxlib,
        argv=argv,
        cwd=str(cwd),
        env_changes=changes,
        xla_flags=flags,
        xla_flag_sources=env.flags.sources(),
        overridden_flags=env.flags.overridden,
        presets=presets,
        dump_dir=dump_dir,
        platform=platform,
        timeout=request.timeout,
        name=request.name or _default_name(request.program),
        copy_files=copy_files,
        notes=notes,
        profile=profile if profile.name else None,
        quiet=request.quiet if request.quiet is not None else _asks_for_vlog(env),
        frontend=frontend,
        tf_xla_flags=env.tf_flags.final(),
        tf_xla_flag_sources=env.tf_flags.sources(),
        processes=processes,
        record_inputs=request.record_inputs,
        measure_calls=request.measure_calls if frontend == "jax" else None,
        stall=request.stall,
        explain_recompiles=request.explain_recompiles and frontend == "jax",
    )


def _asks_for_vlog(env: EnvBuilder) -> bool:
    """VLOG level 1 alone prints ~10k lines for a small program: too many for a terminal."""
    level = env.get("TF_CPP_MAX_VLOG_LEVEL")[0]
    return level is not None and level.isdigit() and int(level) >= 1


def _default_name(program: Program) -> str:
    """smoke:dot -> dot, smoke:a,b -> smoke, dir/train.py -> train, -m pkg.job -> job."""
    if program.kind == "smoke":
        return program.name if "," not in program.name else "smoke"
    if program.kind == "script":
        return Path(program.name).stem
    return program.name.rsplit(".", 1)[-1]
