"""Which debug-info flag a C++ source file finally gets from a set of bazel options.

Bazel orders a compile command as: compilation-mode flags (-g for dbg), then
--copt, then --cxxopt, then every matching --per_file_copt in order. The last
-g* flag wins, which is how a per-file -g0 placed after --copt=-g silently
removes debug info (openxla/xla#3381). This module replays that ordering so
profiles can be checked, and so tests can pin that debug profiles really give
-g to XLA sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Expansions of the upstream configs our profiles may name: JAX's .bazelrc `debug_symbols` / `debug`
# and XLA's tensorflow.bazelrc `dbg`.
UPSTREAM_CONFIGS: dict[str, list[str]] = {
    # JAX .bazelrc
    "debug_symbols": ["--strip=never", "--per_file_copt=xla/pjrt|xla/python@-g3"],
    "debug": ["--config=debug_symbols", "--compilation_mode=fastbuild"],
    # XLA tensorflow.bazelrc
    "dbg": ["--compilation_mode=dbg", "--per_file_copt=+.*,-xla.*@-g0", "--copt=-DDEBUG_BUILD"],
}

_DEBUG_FLAG = re.compile(r"^-g(gdb)?\d*$|^-gmlt$|^-gline-tables-only$")

XLA_SAMPLE = "external/xla/xla/service/hlo_pass_pipeline.cc"
JAXLIB_SAMPLE = "jaxlib/xla/xla.cc"


@dataclass(frozen=True)
class DebugInfo:
    flag: str | None  # the winning -g* flag, None when nothing sets one
    source: str  # the option that decided it

    @property
    def has_debug_info(self) -> bool:
        return self.flag is not None and self.flag not in ("-g0", "-ggdb0")


def expand_configs(options: list[str], known: dict[str, list[str]] | None = None) -> tuple[list[str], list[str]]:
    """Expand --config=NAME for known upstream configs; return (options, unknown names)."""
    known = UPSTREAM_CONFIGS if known is None else known
    expanded: list[str] = []
    unknown: list[str] = []

    def walk(opts: list[str], depth: int) -> None:
        for opt in opts:
            if opt.startswith("--config="):
                name = opt.split("=", 1)[1]
                if name in known and depth < 10:
                    walk(known[name], depth + 1)
                else:
                    unknown.append(name)
            else:
                expanded.append(opt)

    walk(options, 0)
    return expanded, unknown


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts = re.split(r"(?<!\\)" + re.escape(sep), text)
    return [p.replace("\\" + sep, sep) for p in parts]


def _per_file_matches(spec: str, path: str) -> tuple[bool, list[str]]:
    filters, _, options = spec.partition("@")
    includes, excludes = [], []
    for pattern in _split_unescaped(filters, ","):
        if pattern.startswith("-"):
            excludes.append(pattern[1:])
        else:
            includes.append(pattern[1:] if pattern.startswith("+") else pattern)
    # bazel's RegexFilter searches (it does not anchor) each pattern in the path.
    hit = any(re.search(p, path) for p in includes) and not any(re.search(p, path) for p in excludes)
    return hit, _split_unescaped(options, ",")


def debug_info_for(options: list[str], path: str) -> DebugInfo:
    """The -g* flag that wins for `path` (an exec path, e.g. external/xla/xla/...)."""
    options, _ = expand_configs(options)
    mode = "fastbuild"
    copts: list[str] = []
    per_file: list[str] = []
    for opt in options:
        if opt.startswith("--compilation_mode="):
            mode = opt.split("=", 1)[1]
        elif opt in ("-c", "--compilation_mode"):
            continue
        elif opt.startswith("--copt=") or opt.startswith("--cxxopt="):
            copts.append(opt)
        elif opt.startswith("--per_file_copt="):
            per_file.append(opt)
    result = (
        DebugInfo("-g", "--compilation_mode=dbg") if mode == "dbg" else DebugInfo(None, f"--compilation_mode={mode}")
    )
    for opt in copts:
        flag = opt.split("=", 1)[1]
        if _DEBUG_FLAG.match(flag):
            result = DebugInfo(flag, opt)
    for opt in per_file:
        hit, flags = _per_file_matches(opt.split("=", 1)[1], path)
        if hit:
            for flag in flags:
                if _DEBUG_FLAG.match(flag):
                    result = DebugInfo(flag, opt)
    return result


def check_debug_info(profile) -> list[str]:
    """Warnings for a profile that asks for debug info but would not give it to
    XLA or jaxlib sources (empty when all is well or no debug info is wanted)."""
    from xlatools.bazelrc import bazel_options

    bazel = profile.bazel
    wants_debug = (
        bazel.compilation_mode == "dbg"
        or bazel.strip == "never"
        or any(name in ("debug", "debug_symbols", "dbg") for name in bazel.configs)
    )
    if not wants_debug:
        return []
    options = bazel_options(bazel)
    warnings = []
    for label, sample in (("XLA", XLA_SAMPLE), ("jaxlib", JAXLIB_SAMPLE)):
        info = debug_info_for(options, sample)
        if label == "jaxlib" and bazel.compilation_mode != "dbg":
            continue  # upstream debug_symbols covers XLA's pjrt/python only; jaxlib is not promised
        if not info.has_debug_info:
            flag = info.flag or "no -g flag"
            warnings.append(
                f"{label} sources (e.g. {sample}) get no debug info: {flag} from {info.source} "
                "wins, as the last -g* flag on the compile line (see openxla/xla#3381)"
            )
    return warnings
