"""Checks of environment variables that change what a jax program does. Pure: the
environment (a dict) in, Checks out; asking the jaxlib about flags is passed in."""

from __future__ import annotations

import os
from typing import Callable, Mapping

from xlatools.doctor.model import Check, fail, ok, warn
from xlatools.errors import XlaToolsError

# Flags of libtpu, which reads LIBTPU_INIT_ARGS; in XLA_FLAGS they are unknown (fatal, jax#15616).
TPU_PREFIXES = ("xla_tpu_", "xla_jf_", "xla_sc_", "xla_megacore_")
_FALSE = ("", "0", "false", "no", "off")

UnknownFlags = Callable[[dict[str, str]], list[str]]


def _flag_findings(flags: list[str], unknown: UnknownFlags) -> tuple[list[str], list[str], str | None]:
    """(problems, fixes, a note when this jaxlib could not be asked) for one XLA_FLAGS value."""
    from xlatools.run.flags import check_flag_value, split_flag

    problems: list[str] = []
    fixes: list[str] = []
    by_name = {}
    for flag in flags:
        name, value = split_flag(flag)
        if not flag.startswith("--") or not name:
            problems.append(f"'{flag}' is not a flag")
        elif name in ("v", "vmodule"):
            problems.append(f"{flag} is not an XLA flag")
            fixes.append("set TF_CPP_MAX_VLOG_LEVEL / TF_CPP_VMODULE instead of --v/--vmodule")
        elif name.startswith(TPU_PREFIXES):
            problems.append(f"--{name} is a TPU (libtpu) flag")
            fixes.append(f"move --{name} from XLA_FLAGS to LIBTPU_INIT_ARGS")
        else:
            by_name[name] = flag
            problem = check_flag_value(name, value)
            if problem:
                problems.append(problem)
                fixes.append(f"fix the value of --{name}")
    if by_name:
        try:
            refused = unknown(by_name)
        except XlaToolsError as exc:
            return problems, fixes, f"could not ask this jaxlib whether it knows {', '.join(by_name)}: {exc.message}"
        for name in refused:
            problems.append(f"--{name} is unknown to this jaxlib")
            fixes.append(f"remove --{name} (XLA aborts at start-up: 'Unknown flag in XLA_FLAGS')")
    return problems, fixes, None


def check_xla_flags(env: Mapping[str, str], unknown: UnknownFlags) -> Check:
    name = "env XLA_FLAGS"
    value = env.get("XLA_FLAGS", "")
    if not value.strip():
        return ok(name, "not set")
    import shlex

    try:
        flags = shlex.split(value)
    except ValueError as exc:
        return fail(name, f"cannot split XLA_FLAGS={value!r}: {exc}", "fix the quoting in XLA_FLAGS")
    if flags and not flags[0].startswith("-"):
        return warn(
            name,
            f"XLA_FLAGS names a flag file ({flags[0]}); its flags were not checked",
            "put the flags themselves into XLA_FLAGS to have them checked",
        )
    problems, fixes, note = _flag_findings(flags, unknown)
    if problems:
        return fail(
            name, "; ".join(problems + ([note] if note else [])), "; ".join(dict.fromkeys(fixes)) or "fix XLA_FLAGS"
        )
    if note:
        return warn(name, note, "fix the failures above (jax must start), then run doctor again")
    return ok(name, f"{len(flags)} flag(s), all known to this jaxlib with well-typed values")


def check_libtpu_args(env: Mapping[str, str], has_libtpu: bool) -> Check:
    name = "env LIBTPU_INIT_ARGS"
    value = env.get("LIBTPU_INIT_ARGS", "")
    if not value.strip():
        return ok(name, "not set")
    if not has_libtpu:
        return warn(
            name,
            f"LIBTPU_INIT_ARGS={value} but no libtpu is installed: nothing reads it",
            "unset it, or install jax[tpu] on a TPU host",
        )
    return ok(name, f"LIBTPU_INIT_ARGS={value} (read by libtpu)")


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def check_tf_cpp(env: Mapping[str, str]) -> Check:
    """jax sets TF_CPP_MIN_LOG_LEVEL=1 when unset, which hides every VLOG line."""
    name = "env TF_CPP_*"
    min_level = env.get("TF_CPP_MIN_LOG_LEVEL")
    vlog = _int(env.get("TF_CPP_MAX_VLOG_LEVEL"), 0) > 0 or bool(env.get("TF_CPP_VMODULE"))
    level = _int(min_level, 1)
    shown = "unset, so jax sets it to 1" if min_level in (None, "") else f"TF_CPP_MIN_LOG_LEVEL={min_level}"
    if vlog and level > 0 and env.get("JAX_LOGGING_LEVEL", "").upper() not in ("DEBUG", "INFO"):
        return warn(
            name,
            f"VLOG requested (TF_CPP_MAX_VLOG_LEVEL/TF_CPP_VMODULE) but TF_CPP_MIN_LOG_LEVEL is {shown}: "
            "no VLOG line will print",
            "export TF_CPP_MIN_LOG_LEVEL=0 (or use `xlatools run --vlog N`)",
        )
    if level >= 2:
        return warn(
            name,
            f"{shown}: XLA's warnings{' and errors' if level >= 3 else ''} are hidden",
            "unset TF_CPP_MIN_LOG_LEVEL while debugging",
        )
    return ok(name, f"TF_CPP_MIN_LOG_LEVEL {shown}" + (", VLOG on" if vlog else ""))


def check_compilation_cache(env: Mapping[str, str]) -> Check:
    name = "env JAX compilation cache"
    cache_dir = env.get("JAX_COMPILATION_CACHE_DIR", "")
    enabled = env.get("JAX_ENABLE_COMPILATION_CACHE", "").strip().lower()
    if cache_dir and enabled not in ("0", "false", "no", "off"):
        return warn(
            name,
            f"JAX_COMPILATION_CACHE_DIR={cache_dir}: a cache hit compiles nothing, so XLA dumps and "
            "compile logs are missing for cached functions (jax#8090)",
            "unset JAX_COMPILATION_CACHE_DIR (or JAX_ENABLE_COMPILATION_CACHE=false) when dumping; "
            "`xlatools run --dump` turns the cache off itself",
        )
    return ok(name, "no persistent compilation cache from the environment")


def check_platforms(env: Mapping[str, str], plugins: Mapping[str, str]) -> Check:
    name = "env JAX_PLATFORMS"
    forced = env.get("JAX_PLATFORMS", "") or env.get("JAX_PLATFORM_NAME", "")
    if not forced:
        return ok(name, "not set: jax picks the best platform")
    gpu = [p for p in plugins if "cuda" in p or "rocm" in p]
    if gpu and not any(word in forced for word in ("cuda", "gpu", "rocm")):
        return warn(
            name,
            f"JAX_PLATFORMS={forced} hides the GPU of the installed {', '.join(gpu)}",
            "unset JAX_PLATFORMS (or include cuda) to use the GPU",
        )
    return ok(name, f"platform forced: {forced}")


def check_visible_devices(env: Mapping[str, str], plugins: Mapping[str, str]) -> Check:
    name = "env CUDA_VISIBLE_DEVICES"
    if "CUDA_VISIBLE_DEVICES" not in env:
        return ok(name, "not set")
    value = env["CUDA_VISIBLE_DEVICES"]
    if value.strip() in ("", "-1", "none", "NoDevFiles") and any("cuda" in p for p in plugins):
        return warn(
            name,
            f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU from the CUDA plugin",
            "unset CUDA_VISIBLE_DEVICES or list the GPUs to use (e.g. 0,1)",
        )
    return ok(name, f"CUDA_VISIBLE_DEVICES={value}")


def check_loader_env(env: Mapping[str, str]) -> Check:
    """LD_PRELOAD changes every process; LD_LIBRARY_PATH decides which libstdc++ jaxlib gets
    (the native-library checks follow it)."""
    name = "env LD_LIBRARY_PATH/LD_PRELOAD"
    preload = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p]
    missing = [p for p in preload if "/" in p and not os.path.exists(p)]
    if missing:
        return fail(
            name,
            f"LD_PRELOAD names missing files: {', '.join(missing)} (every process prints a loader error)",
            "fix or unset LD_PRELOAD",
        )
    if preload:
        return warn(
            name,
            f"LD_PRELOAD={' '.join(preload)} is loaded into jax (allocators, sanitizers change behaviour)",
            "unset LD_PRELOAD unless you mean it",
        )
    paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    if paths:
        return ok(name, f"LD_LIBRARY_PATH={':'.join(paths)} (searched before the system libraries)")
    return ok(name, "neither set")
