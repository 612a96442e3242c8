"""Plan a run: program + presets + profile + CLI switches -> RunPlan (pure).

Nothing here touches processes or files; `xlatools run --dry-run` prints the
same RunPlan that the runner executes. Paths inside the bundle are written
`{bundle}/...` and bound once the bundle directory exists.

Environment precedence, lowest first: the caller's environment < presets (in
the order given) < the profile's `run:` section < explicit CLI switches.
XLA_FLAGS and TF_CPP_VMODULE are merged item by item, not replaced whole.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xlatools.errors import UsageError
from xlatools.run.presets.catalog import Catalog, Preset
from xlatools.run.flags import FlagLayers, flag_name, join_flags, parse_env_flags, validate_flag
from xlatools.run.frontends import TF_XLA_FLAGS, dumping_env, platform_env

BUNDLE = "{bundle}"
DUMP_DIR = f"{BUNDLE}/xla_dump"
SMOKE_DIR = Path(__file__).resolve().parent / "smoke"
SMOKE_PROGRAMS = ("dot", "matmul", "conv", "reduce", "while", "grad", "collectives")
SMOKE_HOST_DEVICES = 4  # CPU devices for `collectives`, via --xla_force_host_platform_device_count
_LOG_VARS = ("TF_CPP_MAX_VLOG_LEVEL", "TF_CPP_VMODULE")


@dataclass(frozen=True)
class Program:
    kind: str  # "smoke", "script" or "module"
    name: str  # smoke names joined by ",", the script path, or the module
    args: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return {"smoke": f"smoke:{self.name}", "module": f"-m {self.name}"}.get(self.kind, self.name)


def parse_program(program: str | None, module: str | None, args: list[str], cwd: Path) -> Program:
    if module and program:
        # `-m mod a b`: typer hands us the first extra word as PROGRAM.
        args = [program, *args]
        program = None
    if module:
        return Program("module", module, tuple(args))
    if not program or program == "smoke:all":
        return Program("smoke", ",".join(SMOKE_PROGRAMS), tuple(args))
    if program.startswith("smoke:"):
        names = [n for n in program[len("smoke:"):].split(",") if n]
        for name in names:
            if name not in SMOKE_PROGRAMS:
                import difflib

                close = difflib.get_close_matches(name, SMOKE_PROGRAMS, n=1)
                hint = f"did you mean 'smoke:{close[0]}'? " if close else ""
                raise UsageError(f"unknown smoke program '{name}'", hint=f"{hint}known: all, {', '.join(SMOKE_PROGRAMS)}")
        if not names:
            raise UsageError("smoke: needs a name", hint=f"e.g. smoke:dot; known: all, {', '.join(SMOKE_PROGRAMS)}")
        return Program("smoke", ",".join(names), tuple(args))
    path = Path(program).expanduser()
    if not path.is_absolute():
        path = cwd / path
    if not path.is_file():
        raise UsageError(
            f"program not found: {program}",
            hint="give a .py file, `-m module`, or smoke:NAME (smoke:all runs every built-in smoke program)",
        )
    if path.suffix != ".py":
        raise UsageError(f"program {program} is not a .py file", hint="for a module use -m NAME")
    return Program("script", str(path), tuple(args))


@dataclass
class RunRequest:
    """Everything the user asked for, already split into lists (from the CLI and the profile)."""

    program: Program
    python: str
    dump: bool = False
    presets: list[str] = field(default_factory=list)
    xla_flags: list[str] = field(default_factory=list)
    vmodule: list[str] = field(default_factory=list)
    vlog: int | None = None
    env: list[str] = field(default_factory=list)
    platform: str | None = None
    timeout: float | None = None
    name: str | None = None
    frontend: str | None = None  # None: the profile's, else detected


@dataclass
class ProfileRun:
    """The parts of a resolved profile that a run uses (plain data, so plans stay pure)."""

    name: str | None = None
    file: str | None = None
    chain: list[str] = field(default_factory=list)
    presets: list[str] = field(default_factory=list)
    dump_preset: str = "hlo"
    env: dict[str, str] = field(default_factory=dict)
    xla_flags: list[str] = field(default_factory=list)
    platform: str = "auto"
    python: str | None = None
    timeout: float | None = None
    frontend: str | None = None
    resolved: dict[str, Any] = field(default_factory=dict)  # the whole profile after extends, for the manifest
    provenance: list[dict[str, Any]] = field(default_factory=list)  # file:line of every value set


@dataclass
class EnvChange:
    name: str
    value: str | None  # None: removed
    source: str
    previous: str | None  # the caller's value, when it had one


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
    overridden_flags: list[dict[str, str]]
    presets: list[dict[str, Any]]
    dump_dir: str | None
    platform: str
    timeout: float | None
    name: str
    copy_files: list[str]
    notes: list[str]
    profile: dict[str, Any] | None
    frontend: str = "jax"
    tf_xla_flags: list[str] = field(default_factory=list)  # TensorFlow's own flags, merged like XLA_FLAGS
    tf_xla_flag_sources: dict[str, str] = field(default_factory=dict)

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

        bound = RunPlan(**{**self.__dict__})
        bound.argv = [sub(a) for a in self.argv]
        bound.env_changes = [EnvChange(c.name, sub(c.value), c.source, c.previous) for c in self.env_changes]
        bound.xla_flags = [sub(f) for f in self.xla_flags]
        bound.tf_xla_flags = [sub(f) for f in self.tf_xla_flags]
        bound.xla_flag_sources = {sub(k): v for k, v in self.xla_flag_sources.items()}
        bound.dump_dir = sub(self.dump_dir)
        return bound

    def flags_to_check(self) -> dict[str, str]:
        return {flag_name(flag): flag for flag in self.xla_flags}

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["program"] = {**asdict(self.program), "label": self.program.label}
        return data


def split_assignment(item: str, option: str, sep: str = "=") -> tuple[str, str]:
    key, found, value = item.partition(sep)
    if not found or not key.strip():
        example = {"--env": "JAX_TRACEBACK_FILTERING=off", "--vmodule": "hlo_pass_pipeline=1"}.get(option, "KEY=VALUE")
        raise UsageError(f"{option} {item!r}: expected KEY{sep}VALUE", hint=f"e.g. {option} {example}")
    return key.strip(), value


def parse_vmodule(value: str, where: str) -> dict[str, int]:
    levels: dict[str, int] = {}
    for item in (part for part in value.split(",") if part.strip()):
        module, level = split_assignment(item, where)
        try:
            levels[module] = int(level)
        except ValueError:
            raise UsageError(f"{where} {item!r}: the level must be a whole number", hint="e.g. hlo_pass_pipeline=1") from None
    return levels


class _EnvBuilder:
    """Collects environment settings layer by layer, remembering where each came from."""

    def __init__(self, caller: dict[str, str]):
        self.caller = caller
        self.values: dict[str, tuple[str | None, str]] = {}
        self.flags = FlagLayers()
        self.tf_flags = FlagLayers()
        self.vmodule: dict[str, tuple[int, str]] = {}
        caller_flags = caller.get("XLA_FLAGS", "")
        self.flags.add(parse_env_flags(caller_flags) if caller_flags.strip() else [], "environment")
        caller_tf = caller.get(TF_XLA_FLAGS, "")
        self.tf_flags.add(parse_env_flags(caller_tf, TF_XLA_FLAGS) if caller_tf.strip() else [], "environment")
        self.add_vmodule(parse_vmodule(caller.get("TF_CPP_VMODULE", ""), "TF_CPP_VMODULE"), "environment")

    def set(self, name: str, value: str | None, source: str) -> None:
        if name == "XLA_FLAGS":
            flags = parse_env_flags(value or "")
            for flag in flags:
                validate_flag(flag, f"XLA_FLAGS from {source}")
            self.flags.add(flags, source)
        elif name == TF_XLA_FLAGS:
            self.tf_flags.add([validate_flag(f, f"{name} from {source}") for f in parse_env_flags(value or "", name)], source)
        elif name == "TF_CPP_VMODULE":
            self.add_vmodule(parse_vmodule(value or "", f"TF_CPP_VMODULE from {source}"), source)
        else:
            self.values[name] = (value, source)

    def add_vmodule(self, levels: dict[str, int], source: str) -> None:
        for module, level in levels.items():
            self.vmodule[module] = (level, source)

    def changes(self) -> list[EnvChange]:
        changes = []
        for name, (value, source) in self.values.items():
            if value != self.caller.get(name):
                changes.append(EnvChange(name, value, source, self.caller.get(name)))
        final_flags = join_flags(self.flags.final())
        if final_flags != self.caller.get("XLA_FLAGS", ""):
            changes.append(EnvChange("XLA_FLAGS", final_flags or None, "merged", self.caller.get("XLA_FLAGS")))
        final_tf = join_flags(self.tf_flags.final())
        if final_tf != self.caller.get(TF_XLA_FLAGS, ""):
            changes.append(EnvChange(TF_XLA_FLAGS, final_tf or None, "merged", self.caller.get(TF_XLA_FLAGS)))
        vmodule = ",".join(f"{m}={lvl}" for m, (lvl, _) in self.vmodule.items())
        if vmodule != self.caller.get("TF_CPP_VMODULE", ""):
            changes.append(EnvChange("TF_CPP_VMODULE", vmodule or None, "merged", self.caller.get("TF_CPP_VMODULE")))
        return changes


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


def plan_run(
    request: RunRequest,
    profile: ProfileRun,
    catalog: Catalog,
    caller_env: dict[str, str],
    cwd: Path,
    jaxlib: str | None = None,
    gpu_platform: str = "cuda",
    frontend: str = "jax",
) -> RunPlan:
    env = _EnvBuilder(caller_env)
    notes: list[str] = []
    profile_src = f"profile {profile.name}" if profile.name else "profile"

    # Presets: the profile's, then --dump's, then --preset's, each once, in that order.
    wanted = [catalog.get(ref) for ref in profile.presets]
    if request.dump:
        wanted.append(catalog.get(profile.dump_preset, kind="dump"))
    wanted += [catalog.get(ref) for ref in request.presets]
    chosen: list[Preset] = list({(p.kind, p.name): p for p in wanted}.values())  # first mention wins the order
    for preset in chosen:
        _check_version(preset, jaxlib)
    for preset in chosen:
        source = f"preset {preset.name}"
        for name, value in preset.env.items():
            env.set(name, value, source)
        env.flags.add(list(preset.xla_flags), source)
        env.add_vmodule(preset.vmodule, source)

    # The profile's run section.
    for name, value in profile.env.items():
        env.set(name, value, profile_src)
    env.flags.add([validate_flag(f, profile_src) for f in profile.xla_flags], profile_src)

    # Explicit CLI switches.
    for item in request.env:
        name, value = split_assignment(item, "--env")
        env.set(name, value, "--env")
    env.flags.add([validate_flag(f, "--xla-flag") for f in request.xla_flags], "--xla-flag")
    for item in request.vmodule:
        env.add_vmodule(parse_vmodule(item, "--vmodule"), "--vmodule")
    if request.vlog is not None:
        if request.vlog < 0:
            raise UsageError(f"--vlog {request.vlog}: must be 0 or more")
        env.set("TF_CPP_MAX_VLOG_LEVEL", str(request.vlog), "--vlog")

    # jax hides INFO (and so every VLOG line) unless TF_CPP_MIN_LOG_LEVEL=0.
    wants_log = bool(env.vmodule) or any(env.values.get(v, (None,))[0] not in (None, "0") for v in _LOG_VARS)
    if wants_log and env.values.get("TF_CPP_MIN_LOG_LEVEL", (None,))[0] != "0":
        if env.values.get("TF_CPP_MIN_LOG_LEVEL", (None, ""))[1] == "--env":
            notes.append("TF_CPP_MIN_LOG_LEVEL set by --env is not 0: VLOG/vmodule lines will not show")
        else:
            env.set("TF_CPP_MIN_LOG_LEVEL", "0", "needed for VLOG/vmodule output")

    # Dumps always go into the bundle, and a dumping run must compile (no cache hits).
    dumping = any(name.startswith("xla_dump") for name in env.flags.flags if name != "xla_dump_to")
    dump_dir = None
    if dumping or "xla_dump_to" in env.flags.flags:
        old = env.flags.flags.get("xla_dump_to")
        if old is not None:
            notes.append(f"{old[0]} (from {old[1]}) replaced: dumps go into the bundle")
        env.flags.add([f"--xla_dump_to={DUMP_DIR}"], "xlatools (bundle)")
        dump_dir = DUMP_DIR
        env.set("JAX_ENABLE_COMPILATION_CACHE", "false", "xlatools (dumping run)")
        if caller_env.get("JAX_COMPILATION_CACHE_DIR") or "JAX_COMPILATION_CACHE_DIR" in env.values:
            env.set("JAX_COMPILATION_CACHE_DIR", None, "xlatools (dumping run)")
        for name, value in dumping_env(frontend).items():
            env.set(name, value, "xlatools (dumping run)")
        notes.append("persistent compilation cache disabled (a cache hit compiles nothing, so dumps nothing)")

    platform = request.platform or profile.platform or "auto"
    for name, value in platform_env(frontend, platform, gpu_platform).items():
        env.set(name, value, f"--platform {platform}")

    program = request.program
    if program.kind == "smoke":
        argv = [request.python, str(SMOKE_DIR / "main.py"), "--result", f"{BUNDLE}/smoke_results.json",
                *program.name.split(","), *program.args]
        copy_files = sorted(str(p) for p in SMOKE_DIR.glob("*.py"))
        if "collectives" in program.name.split(",") and platform != "gpu" \
                and "xla_force_host_platform_device_count" not in env.flags.flags:
            env.flags.add([f"--xla_force_host_platform_device_count={SMOKE_HOST_DEVICES}"], "smoke:collectives (CPU devices)")
    elif program.kind == "module":
        argv, copy_files = [request.python, "-m", program.name, *program.args], []
    else:
        argv, copy_files = [request.python, program.name, *program.args], [program.name]

    timeout = request.timeout if request.timeout is not None else profile.timeout
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout {timeout:g}: must be more than 0 seconds")
    return RunPlan(
        program=program,
        python=request.python,
        jaxlib=jaxlib,
        argv=argv,
        cwd=str(cwd),
        env_changes=env.changes(),
        xla_flags=env.flags.final(),
        xla_flag_sources=env.flags.sources(),
        overridden_flags=env.flags.overridden,
        presets=[{"name": p.name, "kind": p.kind, "source": p.source} for p in chosen],
        dump_dir=dump_dir,
        platform=platform,
        timeout=timeout,
        name=request.name or _default_name(program),
        copy_files=copy_files,
        notes=notes,
        profile=asdict(profile) if profile.name else None,
        frontend=frontend,
        tf_xla_flags=env.tf_flags.final(),
        tf_xla_flag_sources=env.tf_flags.sources(),
    )


def _default_name(program: Program) -> str:
    """smoke:dot -> dot, smoke:a,b -> smoke, dir/train.py -> train, -m pkg.job -> job."""
    if program.kind == "smoke":
        return program.name if "," not in program.name else "smoke"
    if program.kind == "script":
        return Path(program.name).stem
    return program.name.rsplit(".", 1)[-1]
