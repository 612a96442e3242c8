"""Report the target interpreter as JSON: Python, its XLA frontend's versions, the jaxlib range
its jax accepts, plugins and CUDA wheels, jaxlib's shared objects and (optionally) devices.

Usage: python target_info.py OUT.json [--devices] [--frontend jax|tensorflow|torch-xla|auto]
Standalone: runs in the target interpreter (jax 0.4.30 ... 0.12.x, TensorFlow, torch_xla, or
none of them), which may not have xlatools. Everything but the devices is read without importing
the frontend: a jaxlib that does not match jax makes `import jax` raise, and that mismatch is
one of the things doctor is asked to explain. Those facts are written first; --devices then
starts the frontend's XLA backend, which is also when XLA parses XLA_FLAGS (and TensorFlow
TF_XLA_FLAGS): an unknown flag aborts here, which is how xlatools probes flags. The answer
says `"finished": true` once the devices part is done, so a caller can tell a process that
died while starting the frontend from one that never tried.
"""

import json
import os
import platform
import re
import sys

FRONTENDS = ("jax", "tensorflow", "torch-xla")
TENSORFLOW_DISTS = ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-intel")
PLUGIN_DISTS = (
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-plugin",
    "jax-cuda13-pjrt",
    "jax-rocm60-plugin",
    "jax-rocm7-plugin",
    "libtpu",
    "libtpu-nightly",
)
# pip wheels that bring CUDA's libraries with jax[cuda12] / jax[cuda13]
CUDA_LIB_DISTS = (
    "nvidia-cudnn-cu12",
    "nvidia-nccl-cu12",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu13",
)
PLUGIN_PACKAGES = (
    "jax_plugins",
    "jax_cuda12_plugin",
    "jax_cuda13_plugin",
    "jax_rocm60_plugin",
    "jax_rocm7_plugin",
    "libtpu",
)


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions():
    """Distribution name (normalised) -> version, from the metadata folders on sys.path, first
    one wins (as for imports). Read from the folder names instead of importlib.metadata, whose
    import alone costs more than the rest of this probe (it runs on every uncached run start)."""
    found = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info"):
                dist, _, version = name[: -len(".dist-info")].partition("-")
            elif name.endswith(".egg-info"):
                dist, _, version = name[: -len(".egg-info")].partition("-")
                version = version.split("-py")[0] or _metadata_version(os.path.join(entry, name, "PKG-INFO"))
            else:
                continue
            found.setdefault(_normal(dist), version or None)
    return found


def _metadata_version(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _spec(name):
    try:
        from importlib.util import find_spec

        return find_spec(name)
    except Exception:
        return None


def _origin(name):
    spec = _spec(name)
    return spec.origin if spec else None


def _package_dirs(name):
    spec = _spec(name)
    return [d for d in (spec.submodule_search_locations or []) if os.path.isdir(d)] if spec else []


def _module_constants(path, names):
    """Literal string assignments of `names` in a Python file, read without running it."""
    import ast

    found = {}
    try:
        with open(path) as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return found
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in names:
                    found[target.id] = node.value.value
    return found


def _shared_objects(dirs):
    found = []
    for top in dirs:
        for root, _, files in os.walk(top):
            found.extend(os.path.join(root, name) for name in files if name.endswith(".so") or ".so." in name)
    return sorted(found)


def _detect(info):
    """jax first (the project's own frontend), then PyTorch/XLA, then TensorFlow."""
    if info["jax"] and info["jaxlib"]:
        return "jax"
    if info["versions"].get("torch_xla"):
        return "torch-xla"
    if info["versions"].get("tensorflow"):
        return "tensorflow"
    return "jax"  # nothing usable: the caller reports what is missing for jax


def _jax_devices(info):
    import jax

    devices = jax.devices()
    info["jax"] = jax.__version__
    info["backend"] = jax.default_backend()
    info["devices"] = [{"id": d.id, "platform": d.platform, "kind": getattr(d, "device_kind", "")} for d in devices]


def _tensorflow_devices(info):
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def probe(x):
        return x * 2.0

    probe(tf.ones([2]))  # compiles through XLA: XLA_FLAGS and TF_XLA_FLAGS are parsed by now
    info["frontend_version"] = tf.__version__
    info["xla_source"] = "tensorflow git %s (XLA vendored in TensorFlow's tree)" % tf.version.GIT_VERSION
    devices = tf.config.list_physical_devices()
    info["backend"] = "gpu" if any(d.device_type == "GPU" for d in devices) else "cpu"
    info["devices"] = [{"id": i, "platform": d.device_type.lower(), "kind": d.name} for i, d in enumerate(devices)]


def _torch_xla_devices(info):
    import torch
    import torch_xla
    import torch_xla.runtime as xr

    device = torch_xla.device()
    (torch.ones(2, device=device) * 2.0).cpu()  # runs through XLA: XLA_FLAGS is parsed by now
    try:
        from torch_xla import version

        info["xla_source"] = "torch_xla git %s (the OpenXLA it pins)" % version.__xla_gitrev__
    except Exception:
        pass
    info["frontend_version"] = torch_xla.__version__
    kind = xr.device_type()
    info["backend"] = (kind or "cpu").lower()
    info["devices"] = [
        {"id": i, "platform": info["backend"], "kind": kind or ""} for i in range(xr.global_runtime_device_count())
    ]


def facts():
    """Everything that needs no frontend started."""
    versions = installed_versions()
    jax_dirs = _package_dirs("jax")
    version_file = os.path.join(jax_dirs[0], "version.py") if jax_dirs else None
    constants = _module_constants(version_file, ("_version", "_minimum_jaxlib_version")) if version_file else {}
    jaxlib_dirs = _package_dirs("jaxlib")
    plugin_dirs = [d for name in PLUGIN_PACKAGES for d in _package_dirs(name)]
    tensorflow = next((versions[name] for name in TENSORFLOW_DISTS if versions.get(name)), None)
    plugins = {name: versions[name] for name in PLUGIN_DISTS if versions.get(name)}
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()).strip(),
        "jax": versions.get("jax"),
        "jax_source_version": constants.get("_version"),
        "jax_version_file": version_file,
        "min_jaxlib": constants.get("_minimum_jaxlib_version"),
        "jaxlib": versions.get("jaxlib"),
        "jaxlib_origin": _origin("jaxlib"),
        "numpy": versions.get("numpy"),
        "plugins": sorted(plugins),
        "plugin_versions": plugins,
        "cuda_libs": {name: versions[name] for name in CUDA_LIB_DISTS if versions.get(name)},
        "shared_objects": _shared_objects(jaxlib_dirs[:1] + plugin_dirs),
        "versions": dict(
            [
                (name, versions[key])
                for name, key in (("torch", "torch"), ("torch_xla", "torch-xla"))
                if versions.get(key)
            ]
            + ([("tensorflow", tensorflow)] if tensorflow else [])
        ),
    }


def _write(out, info):
    with open(out + ".tmp", "w") as handle:
        json.dump(info, handle)
    os.replace(out + ".tmp", out)


def main():
    out = sys.argv[1]
    open(out + ".alive", "w").close()  # a sign of life before anything slow: xlatools stops a probe without it
    wanted = sys.argv[sys.argv.index("--frontend") + 1] if "--frontend" in sys.argv else "auto"
    info = facts()
    info["frontend"] = wanted if wanted in FRONTENDS else _detect(info)
    module = {"jax": "jaxlib", "tensorflow": "tensorflow", "torch-xla": "torch_xla"}[info["frontend"]]
    info["frontend_origin"] = _origin(module)
    if info["frontend"] == "jax":
        info["frontend_version"] = info["jaxlib"]
        info["xla_source"] = "jaxlib %s" % info["jaxlib"] if info["jaxlib"] else None
    else:
        info["frontend_version"] = info["versions"].get(
            "tensorflow" if info["frontend"] == "tensorflow" else "torch_xla"
        )
    if "--devices" in sys.argv and info["frontend_version"]:
        _write(out, info)  # the facts stay readable if starting the frontend kills this process
        start = {"jax": _jax_devices, "tensorflow": _tensorflow_devices, "torch-xla": _torch_xla_devices}
        try:
            start[info["frontend"]](info)
        except Exception as exc:  # reported, not raised: the caller decides
            info["devices_error"] = "%s: %s" % (type(exc).__name__, exc)
    info["finished"] = True
    _write(out, info)


if __name__ == "__main__":
    main()
