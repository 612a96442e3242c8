"""XLA_FLAGS: parse, merge in layers, and check against the target jaxlib.

XLA aborts the whole process on a flag it does not know, at backend start-up,
long after the user pressed enter. So every flag is checked before launch:
first against a table of versions where the flag was seen accepted or refused,
and when the table cannot decide (a flag not in it, a version between the
known ones, a self-built jaxlib), by probing the target interpreter once and
caching the answer (see xlatools.run.target).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from xlatools.errors import UsageError

# flag name -> (oldest jaxlib seen accepting it, newest jaxlib seen refusing it).
# Measured on jaxlib 0.4.30 and 0.10.2 (tests/integration/test_run_versions.py
# re-checks the table against both). None: not observed.
_ACCEPTED_SINCE_0430 = "0.4.30"
KNOWN_FLAGS: dict[str, tuple[str | None, str | None]] = {
    **{
        name: (_ACCEPTED_SINCE_0430, None)
        for name in (
            "xla_dump_to",
            "xla_dump_hlo_as_text",
            "xla_dump_hlo_as_proto",
            "xla_dump_hlo_as_dot",
            "xla_dump_hlo_as_html",
            "xla_dump_hlo_as_url",
            "xla_dump_hlo_pass_re",
            "xla_dump_hlo_pipeline_re",
            "xla_dump_hlo_module_re",
            "xla_dump_hlo_snapshots",
            "xla_dump_fusion_visualization",
            "xla_dump_include_timestamp",
            "xla_dump_max_hlo_modules",
            "xla_dump_module_metadata",
            "xla_dump_large_constants",
            "xla_backend_optimization_level",
            "xla_disable_hlo_passes",
            "xla_enable_hlo_passes_only",
            "xla_disable_all_hlo_passes",
            "xla_llvm_disable_expensive_passes",
            "xla_force_host_platform_device_count",
            "xla_cpu_use_thunk_runtime",
            "xla_gpu_dump_llvmir",
            "xla_gpu_dump_autotune_results_to",
            "xla_gpu_autotune_level",
        )
    },
    # Newer only: refused by 0.4.30 ("Unknown flags in XLA_FLAGS"), accepted by 0.10.2.
    "xla_dump_emitter_re": ("0.10.2", "0.4.30"),
    "xla_dump_hlo_unoptimized_snapshots": ("0.10.2", "0.4.30"),
    "xla_dump_hlo_to_subfolder": ("0.10.2", "0.4.30"),
    "xla_cpu_max_isa": ("0.10.2", "0.4.30"),
}


def flag_name(flag: str) -> str:
    """`--xla_dump_to=/x` -> `xla_dump_to`."""
    return flag.lstrip("-").split("=", 1)[0]


def validate_flag(flag: str, where: str) -> str:
    if not flag.startswith("--") or not flag_name(flag):
        raise UsageError(
            f"{where}: '{flag}' is not an XLA flag",
            hint="XLA flags look like --xla_dump_hlo_as_text or --xla_dump_hlo_pass_re=.*",
        )
    if flag_name(flag) in ("v", "vmodule"):
        raise UsageError(
            f"{where}: {flag} is not an XLA_FLAGS flag (XLA aborts on it)",
            hint="use --vlog N or --vmodule FILE=N; xlatools sets TF_CPP_MAX_VLOG_LEVEL / TF_CPP_VMODULE",
        )
    return flag


def parse_env_flags(value: str) -> list[str]:
    """Split an XLA_FLAGS value from the caller's environment."""
    try:
        parts = shlex.split(value)
    except ValueError as exc:
        raise UsageError(f"cannot parse XLA_FLAGS from the environment: {exc}", hint=f"XLA_FLAGS={value!r}") from None
    if parts and not parts[0].startswith("-"):
        # XLA reads such a value as a file of flags; we would lose track of what it sets.
        raise UsageError(
            f"XLA_FLAGS in the environment names a flag file ({parts[0]}), which xlatools cannot merge",
            hint="put the flags themselves into XLA_FLAGS, or pass them with --xla-flag",
        )
    return parts


def join_flags(flags: list[str]) -> str:
    """One XLA_FLAGS value. XLA understands `--name="a b"`, not shell quoting of the whole flag."""
    parts = []
    for flag in flags:
        name, eq, value = flag.partition("=")
        if eq and any(ch.isspace() for ch in value):
            flag = f'{name}="{value}"'
        parts.append(flag)
    return " ".join(parts)


@dataclass
class FlagLayers:
    """Flags merged layer by layer; a later layer's flag replaces an earlier one of the same name."""

    flags: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (flag, source)
    overridden: list[dict[str, str]] = field(default_factory=list)

    def add(self, flags: list[str], source: str) -> None:
        for flag in flags:
            name = flag_name(flag)
            old = self.flags.get(name)
            if old is not None and old[0] != flag:
                self.overridden.append({"flag": old[0], "by": flag, "from": old[1], "source": source})
            self.flags.pop(name, None)  # re-insert: the order shows the layer it came from
            self.flags[name] = (flag, source)

    def final(self) -> list[str]:
        return [flag for flag, _ in self.flags.values()]

    def sources(self) -> dict[str, str]:
        return {flag: source for flag, source in self.flags.values()}


def _version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def table_verdict(name: str, jaxlib_version: str | None) -> bool | None:
    """True/False when the table decides whether `jaxlib_version` accepts the flag; None when unsure."""
    known = KNOWN_FLAGS.get(name)
    version = _version(jaxlib_version)
    if known is None or version is None:
        return None
    accepted_since, refused_upto = (_version(v) for v in known)
    if version.local or version.is_devrelease or version.is_prerelease:
        return None  # a self-built or pre-release jaxlib may carry flags of either side
    if accepted_since is not None and version >= accepted_since:
        return True
    if refused_upto is not None and version <= refused_upto:
        return False
    return None


def min_version(names: list[str]) -> str | None:
    """The oldest jaxlib known to accept all `names` (None: all accepted since the table's start)."""
    newest = None
    for name in names:
        since = _version((KNOWN_FLAGS.get(name) or (None, None))[0])
        refused = (KNOWN_FLAGS.get(name) or (None, None))[1]
        if refused and since and (newest is None or since > newest):
            newest = since
    return str(newest) if newest else None


def unknown_from_abort(stderr: str) -> list[str] | None:
    """Flag names XLA reported as unknown in its fatal abort message, if that is what `stderr` holds."""
    for line in stderr.splitlines():
        marker = line.find("Unknown flag")
        if marker != -1 and "XLA_FLAGS:" in line[marker:]:
            listed = line[marker:].split("XLA_FLAGS:", 1)[1].strip()
            # 0.4.30 appends a double space and a garbled copy of the remaining flags.
            listed = listed.split("  ", 1)[0].split()
            return [flag_name(flag) for flag in listed if flag.startswith("-")]
    return None


# Value types of XLA flags, as XLA_FLAGS=--help lists them (jaxlib 0.10.2). XLA aborts at
# start-up on a value it cannot parse ("Couldn't interpret value abc for flag ...").
# bool: true/false/1/0 in any case (measured: "yes" and "t" abort); a bare --flag means true.
# enum: accepted names, compared case-insensitively (xla_cpu_max_isa warns and ignores others).
FLAG_TYPES: dict[str, str | tuple[str, ...]] = {
    **{name: "bool" for name in (
        "xla_dump_hlo_as_text", "xla_dump_hlo_as_proto", "xla_dump_hlo_as_dot", "xla_dump_hlo_as_html",
        "xla_dump_hlo_as_url", "xla_dump_hlo_as_long_text", "xla_dump_hlo_snapshots",
        "xla_dump_hlo_unoptimized_snapshots", "xla_dump_hlo_to_subfolder", "xla_dump_fusion_visualization",
        "xla_dump_include_timestamp", "xla_dump_module_metadata", "xla_dump_large_constants",
        "xla_disable_all_hlo_passes", "xla_llvm_disable_expensive_passes", "xla_cpu_use_thunk_runtime",
        "xla_gpu_dump_llvmir",
    )},
    **{name: "int" for name in (
        "xla_dump_max_hlo_modules", "xla_backend_optimization_level", "xla_force_host_platform_device_count",
        "xla_gpu_autotune_level",
    )},
    "xla_gpu_autotune_gemm_rtol": "float",
    **{name: "regex" for name in (
        "xla_dump_hlo_pass_re", "xla_dump_hlo_pipeline_re", "xla_dump_hlo_module_re", "xla_dump_emitter_re",
    )},
    **{name: "list" for name in ("xla_disable_hlo_passes", "xla_enable_hlo_passes_only")},
    "xla_dump_to": "path",
    "xla_gpu_dump_autotune_results_to": "path",
    "xla_cpu_max_isa": ("SSE4_2", "AVX", "AVX2", "AVX512", "AVX512_VNNI", "AVX512_BF16", "AMX", "AMX_FP16",
                        "NEON", "SVE"),
}
_BOOL_WORDS = ("true", "false", "1", "0")


def _path_problem(value: str) -> str | None:
    import os

    if value in ("-", "sponge"):  # XLA's special destinations: stdout, and Google's test output
        return None
    path = os.path.abspath(os.path.expanduser(value))
    if os.path.exists(path):
        return None if os.path.isdir(path) or not value.endswith("/") else f"{value} exists and is not a directory"
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.access(parent, os.W_OK | os.X_OK):
        return f"{value} cannot be created: {parent} is not writable"
    return None


def check_flag_value(name: str, value: str | None) -> str | None:
    """What is wrong with `value` for XLA flag `name` (None: fine, or a flag of unknown type).
    `value` None means the flag was given bare (`--xla_dump_hlo_as_text`)."""
    kind = FLAG_TYPES.get(name)
    if kind is None:
        return None
    if value is None:
        return None if kind == "bool" else f"--{name} needs a value"
    if kind == "bool" and value.lower() not in _BOOL_WORDS:
        return f"--{name}={value}: expected true or false (XLA aborts on anything else)"
    if kind == "int":
        try:
            int(value, 10)
        except ValueError:
            return f"--{name}={value}: expected an integer (XLA aborts on anything else)"
    if kind == "float":
        try:
            float(value)
        except ValueError:
            return f"--{name}={value}: expected a number (XLA aborts on anything else)"
    if kind == "regex":
        import re

        try:
            re.compile(value)
        except re.error as exc:
            return f"--{name}={value}: not a regular expression ({exc})"
    if kind == "list" and any(not part.strip() for part in value.split(",")):
        return f"--{name}={value}: an empty name in the comma-separated list"
    if kind == "path":
        return _path_problem(value) if value else f"--{name} needs a directory"
    if isinstance(kind, tuple) and value.upper() not in kind:
        return f"--{name}={value}: expected one of {', '.join(kind)} (XLA ignores other values with a warning)"
    return None


def split_flag(flag: str) -> tuple[str, str | None]:
    """`--name=value` -> (name, value); `--name` -> (name, None)."""
    name, eq, value = flag.lstrip("-").partition("=")
    return name, (value if eq else None)
