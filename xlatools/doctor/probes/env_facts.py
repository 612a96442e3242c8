"""Facts about the target interpreter that need no `import jax`: versions, the jaxlib
range this jax accepts, and the shared objects of jaxlib and its plugins.

Usage: python env_facts.py OUT.json
Standalone: runs in the target interpreter (jax 0.4.30 ... 0.12.x, or none); no xlatools
import. jax is never imported: a jaxlib that does not match jax makes `import jax` raise,
and that mismatch is one of the things we are asked to explain.
"""

import ast
import json
import os
import platform
import sys

PLUGIN_DISTS = ("jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin", "jax-cuda13-pjrt",
                "jax-rocm60-plugin", "jax-rocm7-plugin", "libtpu", "libtpu-nightly")
# pip wheels that bring CUDA's libraries with jax[cuda12] / jax[cuda13]
CUDA_LIB_DISTS = ("nvidia-cudnn-cu12", "nvidia-nccl-cu12", "nvidia-cuda-runtime-cu12",
                  "nvidia-cudnn-cu13", "nvidia-nccl-cu13", "nvidia-cuda-runtime-cu13")
PLUGIN_PACKAGES = ("jax_plugins", "jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "jax_rocm7_plugin",
                   "libtpu")


def _dist_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def _package_dirs(name):
    try:
        from importlib.util import find_spec

        spec = find_spec(name)
    except Exception:
        return []
    if spec is None:
        return []
    return [d for d in (spec.submodule_search_locations or []) if os.path.isdir(d)]


def _module_constants(path, names):
    """Literal string assignments of `names` in a Python file, read without running it."""
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
            for name in files:
                if name.endswith(".so") or ".so." in name:
                    found.append(os.path.join(root, name))
    return sorted(found)


def main():
    jax_dirs = _package_dirs("jax")
    version_file = os.path.join(jax_dirs[0], "version.py") if jax_dirs else None
    constants = _module_constants(version_file, ("_version", "_minimum_jaxlib_version")) if version_file else {}
    jaxlib_dirs = _package_dirs("jaxlib")
    plugin_dirs = [d for name in PLUGIN_PACKAGES for d in _package_dirs(name)]
    info = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()).strip(),
        "jax": _dist_version("jax"),
        "jax_source_version": constants.get("_version"),
        "jax_version_file": version_file,
        "min_jaxlib": constants.get("_minimum_jaxlib_version"),
        "jaxlib": _dist_version("jaxlib"),
        "jaxlib_dir": jaxlib_dirs[0] if jaxlib_dirs else None,
        "plugins": {name: v for name, v in ((n, _dist_version(n)) for n in PLUGIN_DISTS) if v},
        "cuda_libs": {name: v for name, v in ((n, _dist_version(n)) for n in CUDA_LIB_DISTS) if v},
        "shared_objects": _shared_objects(jaxlib_dirs[:1] + plugin_dirs),
    }
    with open(sys.argv[1] + ".tmp", "w") as handle:
        json.dump(info, handle)
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])


if __name__ == "__main__":
    main()
