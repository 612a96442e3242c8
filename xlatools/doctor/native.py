"""Native libraries: which symbol versions (GLIBCXX_3.4.29, GLIBC_2.34, ...) jaxlib's shared
objects need, read from their ELF version-needs sections with pyelftools, against what the
library the dynamic loader would pick provides (its version definitions).

The loader's search order is followed (ld.so(8)): DT_RPATH (when there is no DT_RUNPATH),
LD_LIBRARY_PATH, DT_RUNPATH, the ld.so.conf directories, then the default directories;
a candidate of another ELF class or machine is skipped, as the loader does.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

DEFAULT_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)


@dataclass(frozen=True)
class ElfInfo:
    path: str
    elf_class: int  # 32 or 64
    machine: str
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    # soname of a needed library -> version names this object needs from it
    version_needs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    version_defs: tuple[str, ...] = ()  # versions this object provides


def _split_paths(value: str, origin: str) -> tuple[str, ...]:
    out = []
    for part in value.split(":"):
        if part:
            out.append(part.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
    return tuple(out)


def read_elf(path: str) -> ElfInfo | None:
    """The dynamic-linking facts of one ELF file; None if it is not an ELF file."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection

    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            origin = os.path.dirname(os.path.realpath(path))
            needed, rpath, runpath, needs, defs = [], (), (), {}, []
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        if tag.entry.d_tag == "DT_NEEDED":
                            needed.append(tag.needed)
                        elif tag.entry.d_tag == "DT_RPATH":
                            rpath = _split_paths(tag.rpath, origin)
                        elif tag.entry.d_tag == "DT_RUNPATH":
                            runpath = _split_paths(tag.runpath, origin)
                elif isinstance(section, GNUVerNeedSection):
                    for verneed, aux in section.iter_versions():
                        needs[verneed.name] = tuple(a.name for a in aux)
                elif isinstance(section, GNUVerDefSection):
                    for verdef, aux in section.iter_versions():
                        if not verdef["vd_flags"] & 1:  # VER_FLG_BASE names the file itself
                            defs.extend(a.name for a in aux)
            return ElfInfo(
                path, elf.elfclass, elf["e_machine"], tuple(needed), rpath, runpath, needs, tuple(dict.fromkeys(defs))
            )
    except (OSError, ELFError, ValueError):
        return None


def conf_dirs(conf: str = "/etc/ld.so.conf") -> list[str]:
    """Directories listed in ld.so.conf and the files it includes (the loader's cache holds their libraries)."""
    found: list[str] = []
    try:
        lines = Path(conf).read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include "):
            pattern = line.split(None, 1)[1]
            if not os.path.isabs(pattern):
                pattern = os.path.join(os.path.dirname(conf), pattern)
            for included in sorted(glob.glob(pattern)):
                found += conf_dirs(included)
        elif line:
            found.append(line)
    return found


@dataclass(frozen=True)
class Resolved:
    path: str
    via: str  # "DT_RPATH", "LD_LIBRARY_PATH", "DT_RUNPATH", "ld.so.conf", "default"


def search_order(obj: ElfInfo, env: Mapping[str, str], system_dirs: list[str]) -> list[tuple[str, str]]:
    ld_path = [p for p in env.get("LD_LIBRARY_PATH", "").replace(";", ":").split(":") if p]
    order: list[tuple[str, str]] = []
    if obj.rpath and not obj.runpath:
        order += [(d, "DT_RPATH") for d in obj.rpath]
    order += [(d, "LD_LIBRARY_PATH") for d in ld_path]
    order += [(d, "DT_RUNPATH") for d in obj.runpath]
    order += [(d, "system") for d in system_dirs]
    return order


def resolve(
    soname: str, obj: ElfInfo, env: Mapping[str, str], system_dirs: list[str]
) -> tuple[Resolved, ElfInfo] | None:
    """The library the loader would load for `soname` when `obj` asks for it."""
    for directory, via in search_order(obj, env, system_dirs):
        candidate = os.path.join(directory, soname)
        if not os.path.isfile(candidate):
            continue
        info = read_elf(candidate)
        if info is not None and info.elf_class == obj.elf_class and info.machine == obj.machine:
            return Resolved(candidate, via), info
    return None


def version_key(name: str) -> tuple:
    """GLIBCXX_3.4.29 -> ("GLIBCXX", (3, 4, 29)), for sorting and "the newest"."""
    prefix, _, number = name.rpartition("_")
    try:
        return prefix, tuple(int(part) for part in number.split("."))
    except ValueError:
        return name, ()
