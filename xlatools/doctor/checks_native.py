"""Checks of native libraries: symbol versions jaxlib needs vs what the loader finds, and
for GPU plugins the NVIDIA driver and the cuDNN/NCCL libraries."""

from __future__ import annotations

import os
import re
from typing import Mapping

from xlatools.doctor.model import Check, fail, ok, skip
from xlatools.doctor.native import ElfInfo, read_elf, resolve, version_key

# Libraries the system (or a toolchain such as conda's) provides; jaxlib bundles the rest.
SYSTEM_LIBS = (
    "libc.so.6",
    "libm.so.6",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
)
# Oldest Linux driver each CUDA major version runs on (NVIDIA's minor-version compatibility).
MIN_DRIVER = {"12": "525.60.13", "13": "580.65.06"}


def _newest(versions) -> str:
    return max(versions, key=version_key) if versions else "none"


def _fix_for(soname: str, where: str) -> str:
    if soname.startswith("libstdc++"):
        return (
            f"a newer libstdc++ must come first: drop {os.path.dirname(where)} from LD_LIBRARY_PATH "
            "(an old conda/toolchain lib dir?), or update it (conda install -c conda-forge 'libstdcxx-ng>=12')"
        )
    return f"{where} is too old for this jaxlib: use a jaxlib built for this system, or a newer OS/container image"


def _required(infos: list[ElfInfo]) -> dict[str, dict[str, list[str]]]:
    """soname -> version -> the objects needing it."""
    needs: dict[str, dict[str, list[str]]] = {}
    for info in infos:
        for soname, versions in info.version_needs.items():
            for version in versions:
                needs.setdefault(soname, {}).setdefault(version, []).append(os.path.basename(info.path))
    return needs


def check_native(objects: list[str], env: Mapping[str, str], system_dirs: list[str]) -> list[Check]:
    name = "native libraries"
    infos = [i for i in (read_elf(p) for p in objects) if i is not None]
    if not infos:
        return [skip(name, "no shared objects of jaxlib found")]
    first_user = {}
    for info in infos:
        for soname in info.version_needs:
            first_user.setdefault(soname, info)
    checks, summary = [], []
    for soname, versions in sorted(_required(infos).items()):
        found = resolve(soname, first_user[soname], env, system_dirs)
        if found is None:
            if soname in SYSTEM_LIBS:
                checks.append(
                    fail(
                        f"native {soname}",
                        f"the loader finds no {soname} for {first_user[soname].path}",
                        f"install the system's {soname} (or fix LD_LIBRARY_PATH)",
                    )
                )
            continue
        where, lib = found
        missing = sorted((v for v in versions if v not in lib.version_defs), key=version_key)
        if missing:
            users = sorted({u for v in missing for u in versions[v]})
            prefix = version_key(missing[-1])[0]
            have = _newest([d for d in lib.version_defs if version_key(d)[0] == prefix])
            checks.append(
                fail(
                    f"native {soname}",
                    f"{', '.join(users[:3])} need{'s' if len(users) == 1 else ''} {', '.join(missing[-3:])}; "
                    f"{where.path} (via {where.via}) provides up to {have}: `{missing[-1]} not found` at import",
                    _fix_for(soname, where.path),
                )
            )
        elif soname in ("libstdc++.so.6", "libc.so.6"):
            summary.append(f"{_newest(list(versions))} from {where.path}")
    if not checks:
        checks.append(ok(name, f"{len(infos)} shared objects; needs met: {', '.join(summary) or 'no versioned needs'}"))
    return checks


def driver_version(proc_file: str = "/proc/driver/nvidia/version") -> str | None:
    try:
        text = open(proc_file).read()
    except OSError:
        return None
    match = re.search(r"Kernel Module(?: for [^ ]+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def _tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def check_gpu_driver(plugins: Mapping[str, str], driver: str | None) -> Check:
    name = "NVIDIA driver"
    majors = sorted({m.group(1) for p in plugins for m in [re.search(r"cuda(\d+)", p)] if m})
    if not majors:
        return skip(name, "no CUDA plugin installed")
    if driver is None:
        return fail(
            name,
            f"jax-cuda{majors[0]} plugin installed but no NVIDIA driver is loaded (/proc/driver/nvidia/version)",
            "install the NVIDIA driver, or on a CPU-only host uninstall the CUDA plugin",
        )
    needed = max((MIN_DRIVER.get(m, "0") for m in majors), key=_tuple)
    if _tuple(driver) < _tuple(needed):
        return fail(
            name,
            f"driver {driver} is older than {needed}, the minimum for CUDA {majors[-1]}",
            f"upgrade the driver to >= {needed}, or install a jax CUDA plugin for an older CUDA",
        )
    return ok(name, f"driver {driver} (CUDA {', '.join(majors)} needs >= {needed})")


def check_cuda_libs(
    plugins: Mapping[str, str], cuda_libs: Mapping[str, str], system_found: Mapping[str, str | None]
) -> Check:
    """cuDNN and NCCL: from the nvidia-* wheels jax[cudaNN] installs, else from the system."""
    name = "cuDNN/NCCL"
    if not any("cuda" in p for p in plugins):
        return skip(name, "no CUDA plugin installed")
    found, missing = [], []
    for lib, soname in (("cudnn", "libcudnn.so.9"), ("nccl", "libnccl.so.2")):
        wheel = next((f"{d} {v}" for d, v in cuda_libs.items() if f"-{lib}-" in d), None)
        where = wheel or system_found.get(soname)
        (found if where else missing).append(f"{lib}: {where}" if where else lib)
    if missing:
        return fail(
            name,
            f"not found: {', '.join(missing)}" + (f" (found {', '.join(found)})" if found else ""),
            "pip install -U 'jax[cuda12]' brings them as nvidia-* wheels (or install them system-wide)",
        )
    return ok(name, "; ".join(found))
