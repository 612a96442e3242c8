"""Checks of the target interpreter: Python, jax/jaxlib and whether they belong together,
plugins, devices. Pure: the target in, Checks out (the target is run's probe answer,
xlatools.run.target.probe)."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from xlatools.doctor.model import Check, fail, ok, skip, warn
from xlatools.run.target import ProbedInterpreter

# pip distributions of GPU plugins -> the jaxlib they are built with must equal their own version.
CUDA_PLUGINS = ("jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin", "jax-cuda13-pjrt")


def _release(text: str | None) -> tuple[int, ...] | None:
    """The numeric release of a version (jax compares these: a self-built '0.10.2.dev0+x' is 0.10.2)."""
    try:
        return Version(text).release if text else None
    except InvalidVersion:
        return None


def check_python(target: ProbedInterpreter) -> Check:
    return ok(
        "python", f"Python {target.python_version} at {target.python} ({target.machine}, {target.libc or 'libc ?'})"
    )


def check_installed(target: ProbedInterpreter) -> Check:
    missing = [name for name in ("jax", "jaxlib") if not getattr(target, name)]
    if missing:
        return fail(
            "jax installed",
            f"{target.python} has no {' and no '.join(missing)}",
            f"{target.python} -m pip install -U jax jaxlib (or pick another --python)",
        )
    return ok("jax installed", f"jax {target.jax}, jaxlib {target.jaxlib} ({target.jaxlib_dir})")


def check_compatible(target: ProbedInterpreter) -> Check:
    """jaxlib within the range jax accepts: [jax's _minimum_jaxlib_version, jax itself]."""
    name = "jax/jaxlib versions"
    if not target.jax or not target.jaxlib:
        return skip(name, "jax or jaxlib is not installed")
    jax_v, jaxlib_v, minimum = _release(target.jax), _release(target.jaxlib), _release(target.min_jaxlib)
    pair = f"jax {target.jax} with jaxlib {target.jaxlib}"
    fix = f"{target.python} -m pip install jax=={target.jax} jaxlib=={target.jax} (since 0.4.32 they are released together)"
    if jax_v is None or jaxlib_v is None:
        return warn(name, f"{pair}: cannot compare these versions", fix)
    if minimum is None:
        return warn(
            name,
            f"{pair}: jax's minimum jaxlib is unknown (no _minimum_jaxlib_version in {target.jax_version_file})",
            fix,
        )
    if jaxlib_v < minimum:
        return fail(name, f"{pair}: jax needs jaxlib >= {target.min_jaxlib}; `import jax` raises", fix)
    if jaxlib_v > jax_v:
        return fail(name, f"{pair}: jaxlib is newer than jax; `import jax` raises", fix)
    return ok(name, f"{pair}: within jax's accepted range {target.min_jaxlib} ... {target.jax}")


def check_plugins(target: ProbedInterpreter) -> Check:
    name = "plugins"
    plugins = target.plugin_versions
    if not plugins:
        return ok(name, "no GPU/TPU plugin installed (CPU only)")
    listed = ", ".join(f"{dist} {version}" for dist, version in sorted(plugins.items()))
    stale = [d for d in plugins if d in CUDA_PLUGINS and _release(plugins[d]) != _release(target.jaxlib)]
    if stale:
        return fail(
            name,
            f"{listed}: {', '.join(stale)} not at jaxlib's version {target.jaxlib}; jax skips or fails to load it",
            f"{target.python} -m pip install -U 'jax[cuda12]' (plugins and jaxlib from the same release)",
        )
    return ok(name, listed)


def check_devices(target: ProbedInterpreter, forced: str | None, cached: bool = False) -> Check:
    """`target`: the probe's answer, with the devices or why jax did not start (`devices_error`);
    `cached`: the answer came from the probe cache (made under the environment of that time)."""
    name = "devices"
    if target.devices_error:
        return fail(
            name,
            f"jax.devices() failed: {target.devices_error}",
            "fix the failures above; for a GPU check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES",
        )
    kinds = sorted({f"{d.platform}:{d.kind or '?'}" for d in target.devices})
    evidence = f"{len(target.devices)} device(s) on backend {target.backend} ({', '.join(kinds)})" + (
        "; remembered from an earlier probe" if cached else ""
    )
    gpu_plugin = any(d in CUDA_PLUGINS or "rocm" in d for d in target.plugins)
    if gpu_plugin and not target.has_gpu:
        why = f" (JAX_PLATFORMS={forced})" if forced else ""
        return warn(
            name,
            f"{evidence}: a GPU plugin is installed but jax sees no GPU{why}",
            "check nvidia-smi, the driver version, CUDA_VISIBLE_DEVICES and JAX_PLATFORMS",
        )
    return ok(name, evidence)


def check_run_frontend(
    profile_name: str, frontend: str | None, target: ProbedInterpreter | None, error: str | None
) -> Check:
    """The profile's `run.frontend` against the target: `target` is the probe's answer for that
    frontend (None, with `error`, when the target lacks it)."""
    name = "run.frontend"
    if not frontend:
        return skip(name, f"profile {profile_name} names no run.frontend (runs detect it: jax first)")
    if target is None:
        return fail(
            name,
            f"profile {profile_name} runs {frontend}, which the target cannot start: {error}",
            "install it there, pick another --python (or run.python), or change run.frontend",
        )
    return ok(name, f"profile {profile_name}: {frontend} ({target.described}) in {target.python}")
