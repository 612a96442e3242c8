"""Report the interpreter, jax/jaxlib versions and (optionally) devices as JSON.

Usage: python target_info.py OUT.json [--devices]
Standalone: runs in the target interpreter, which may not have xlatools.
"""

import json
import os
import platform
import sys


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


def main():
    out = sys.argv[1]
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
    }
    if "--devices" in sys.argv and info["jax"]:
        try:
            import jax

            devices = jax.devices()
            info["jax"] = jax.__version__
            info["backend"] = jax.default_backend()
            info["devices"] = [
                {"id": d.id, "platform": d.platform, "kind": getattr(d, "device_kind", "")} for d in devices
            ]
        except Exception as exc:  # reported, not raised: the caller decides
            info["devices_error"] = "%s: %s" % (type(exc).__name__, exc)
    with open(out + ".tmp", "w") as handle:
        json.dump(info, handle)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
