"""Report the interpreter, its XLA frontend's versions and (optionally) devices as JSON.

Usage: python target_info.py OUT.json [--devices] [--frontend jax|tensorflow|torch-xla|auto]
Standalone: runs in the target interpreter, which may not have xlatools.
--devices starts the frontend's XLA backend, which is also when XLA parses
XLA_FLAGS (and TensorFlow TF_XLA_FLAGS): an unknown flag aborts here, which is
how xlatools probes flags.
"""

import json
import os
import platform
import sys

FRONTENDS = ("jax", "tensorflow", "torch-xla")


def _dist_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def _origin(name):
    try:
        from importlib.util import find_spec

        spec = find_spec(name)
        return spec.origin if spec else None
    except Exception:
        return None


def _tensorflow_dist():
    for name in ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-intel"):
        if _dist_version(name):
            return name
    return None


def _detect(info):
    """jax first (the project's own frontend), then PyTorch/XLA, then TensorFlow."""
    if info["jax"] and info["jaxlib"]:
        return "jax"
    if info["versions"].get("torch_xla"):
        return "torch-xla"
    if _tensorflow_dist():
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
    info["devices"] = [{"id": i, "platform": info["backend"], "kind": kind or ""}
                       for i in range(xr.global_runtime_device_count())]


def main():
    out = sys.argv[1]
    wanted = sys.argv[sys.argv.index("--frontend") + 1] if "--frontend" in sys.argv else "auto"
    tf_dist = _tensorflow_dist()
    info = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "jax": _dist_version("jax"),
        "jaxlib": _dist_version("jaxlib"),
        "jaxlib_origin": _origin("jaxlib"),
        "numpy": _dist_version("numpy"),
        "plugins": sorted(
            name for name in ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-rocm60-plugin") if _dist_version(name)
        ),
        "versions": {name: _dist_version(name) for name in ("torch", "torch_xla") if _dist_version(name)},
    }
    if tf_dist:
        info["versions"]["tensorflow"] = _dist_version(tf_dist)
    info["frontend"] = wanted if wanted in FRONTENDS else _detect(info)
    module = {"jax": "jaxlib", "tensorflow": "tensorflow", "torch-xla": "torch_xla"}[info["frontend"]]
    info["frontend_origin"] = _origin(module)
    if info["frontend"] == "jax":
        info["frontend_version"] = info["jaxlib"]
        info["xla_source"] = "jaxlib %s" % info["jaxlib"] if info["jaxlib"] else None
    else:
        info["frontend_version"] = info["versions"].get("tensorflow" if info["frontend"] == "tensorflow" else "torch_xla")
    if "--devices" in sys.argv and info["frontend_version"]:
        start = {"jax": _jax_devices, "tensorflow": _tensorflow_devices, "torch-xla": _torch_xla_devices}
        try:
            start[info["frontend"]](info)
        except Exception as exc:  # reported, not raised: the caller decides
            info["devices_error"] = "%s: %s" % (type(exc).__name__, exc)
    with open(out + ".tmp", "w") as handle:
        json.dump(info, handle)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
