"""XLA_FLAGS: parse, merge in layers, and check against the target jaxlib.

XLA aborts the whole process on a flag it does not know, at backend start-up,
long after the user pressed enter. So every flag is checked before launch:
first against a table of versions where the flag was seen accepted or refused,
and when the table cannot decide (a flag not in it, a version between the
known ones, a self-built jaxlib), by probing the target interpreter once and
caching the answer (see xlatools.run.target).
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from pathlib import Path
from packaging.version import InvalidVersion, Version

from xlatools.errors import REGEX_ERRORS, UsageError

# flag name -> (oldest jaxlib seen accepting it, newest jaxlib seen refusing it).
# Measured on jaxlib 0.4.30, 0.10.2 and 0.12.0.1 (every flag probed on each;
# tests/integration/test_run_versions.py re-checks the table against all three).
# None: not observed. XLA drops flags too, so "accepted" is only known up to the
# newest measured release: a newer jaxlib is probed once (and cached).
NEWEST_MEASURED = "0.12.0.1"
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
    # Newer only: refused by 0.4.30 ("Unknown flags in XLA_FLAGS"), accepted by 0.10.2 and 0.12.0.1.
    "xla_dump_emitter_re": ("0.10.2", "0.4.30"),
    "xla_dump_hlo_unoptimized_snapshots": ("0.10.2", "0.4.30"),
    "xla_dump_hlo_to_subfolder": ("0.10.2", "0.4.30"),
    "xla_cpu_max_isa": ("0.10.2", "0.4.30"),
}


def flag_name(flag: str) -> str:
    """`--xla_dump_to=/x` -> `xla_dump_to`."""
    return flag.lstrip("-").split("=", 1)[0]


_TYPES_FILE = Path(__file__).with_name("flag_types.json")
_BOOLEANS = ("true", "false", "1", "0")  # what XLA's flag parser (tsl) reads as a bool
_EXAMPLES = {"bool": "true", "int32": "2", "int64": "2", "float": "0.5", "double": "0.5", "string": "VALUE"}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# Finer kinds than XLA's own "string" type, for the flags where a wrong value goes unnoticed
# until XLA fails or silently ignores it (xla_cpu_max_isa warns and ignores unknown names).
_LISTS = frozenset({"xla_disable_hlo_passes", "xla_enable_hlo_passes_only"})
_PATHS = frozenset({"xla_dump_to", "xla_gpu_dump_autotune_results_to"})
# Whole-number flags whose type allows what XLA cannot use (a CHECK failure or no devices at all).
_MINIMUMS = {"xla_force_host_platform_device_count": 1}
_ENUMS = {
    "xla_cpu_max_isa": (
        "SSE4_2",
        "AVX",
        "AVX2",
        "AVX512",
        "AVX512_VNNI",
        "AVX512_BF16",
        "AMX",
        "AMX_FP16",
        "NEON",
        "SVE",
    )
}


def _path_problem(value: str) -> str | None:
    """Whether a dump destination can be created (`-` is stdout, `sponge` Google's test output)."""
    import os

    if value in ("-", "sponge"):
        return None
    path = os.path.abspath(os.path.expanduser(value))
    if os.path.exists(path):
        return None if os.path.isdir(path) else f"{value} exists and is not a directory"
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.access(parent, os.W_OK | os.X_OK):
        return f"{value} cannot be created: {parent} is not writable"
    return None


@lru_cache(maxsize=None)
def flag_types() -> dict[str, str]:
    """Flag name -> XLA's type for it (bool, int32, int64, float, double, string), as measured."""
    import json

    return json.loads(_TYPES_FILE.read_text())["types"]


def is_regex_flag(name: str) -> bool:
    return name.endswith("_re")


def value_problem(flag: str) -> tuple[str, str] | None:
    """(what is wrong, an example) when the flag's value cannot be of its type; None when fine or unknown."""
    name, has_value, value = flag.lstrip("-").partition("=")
    kind = flag_types().get(name)
    if kind is None:
        return None  # not in the table: the target probe decides
    example = f"--{name}={'.*' if is_regex_flag(name) else _EXAMPLES.get(kind, 'VALUE')}"
    if kind == "bool":
        ok = not has_value or value.lower() in _BOOLEANS  # measured: TRUE and 0 pass, yes and t abort
        return None if ok else (f"expects a bool ({' or '.join(_BOOLEANS[:2])}), not {value!r}", example)
    if not has_value:
        return f"takes a value ({kind}); without one XLA reads it as an unknown flag and aborts", example
    if name in _ENUMS:
        ok = value.upper() in _ENUMS[name]
        return (
            None if ok else (f"expects one of {', '.join(_ENUMS[name])}, not {value!r}", f"--{name}={_ENUMS[name][0]}")
        )
    if name in _LISTS and any(not part.strip() for part in value.split(",")):
        return f"takes comma-separated names, and {value!r} has an empty one", f"--{name}=fusion,cse"
    if name in _PATHS:
        problem = _path_problem(value)
        return None if problem is None else (problem, f"--{name}=/tmp/xla_dump")
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        try:
            number = int(value)
        except ValueError:
            return f"expects a whole number ({kind}), not {value!r}", example
        low = max(low, _MINIMUMS.get(name, low))
        if number < low and name in _MINIMUMS:
            return f"must be at least {low}, not {value}", f"--{name}={low}"
        return None if low <= number <= high else (f"expects a {kind}, and {value} is out of range", example)
    if kind in ("float", "double"):
        try:
            float(value)
        except ValueError:
            return f"expects a number ({kind}), not {value!r}", example
        return None
    if is_regex_flag(name):
        import re

        try:
            re.compile(value)
        except REGEX_ERRORS as exc:
            return f"is a regular expression, and {value!r} does not compile ({exc})", example
    return None


def validate_flag(flag: str, where: str) -> str:
    """The flag, or UsageError: not a flag, a logging switch XLA aborts on, or a value of the wrong type."""
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
    problem = value_problem(flag)
    if problem is not None:
        raise UsageError(f"{where}: {flag}: --{flag_name(flag)} {problem[0]}", hint=f"e.g. {problem[1]}")
    return flag


def parse_env_flags(value: str, variable: str = "XLA_FLAGS") -> list[str]:
    """Split an XLA_FLAGS (or TF_XLA_FLAGS) value from the caller's environment."""
    try:
        parts = shlex.split(value)
    except ValueError as exc:
        raise UsageError(f"cannot parse {variable} from the environment: {exc}", hint=f"{variable}={value!r}") from None
    if parts and not parts[0].startswith("-"):
        # XLA reads such a value as a file of flags; we would lose track of what it sets.
        raise UsageError(
            f"{variable} in the environment names a flag file ({parts[0]}), which xlatools cannot merge",
            hint=f"put the flags themselves into {variable}"
            + (", or pass them with --xla-flag" if variable == "XLA_FLAGS" else ""),
        )
    return parts


def join_flags(flags: list[str]) -> str:
    """One XLA_FLAGS value. XLA understands `--name="a b"`, not shell quoting of the whole flag: a value with
    whitespace, a quote or a backslash goes in double quotes, where XLA (and parse_env_flags) read a backslash
    as escaping the next character, so `"` and `\\` are escaped (a path `out "q" dir` reaches XLA whole)."""
    parts = []
    for flag in flags:
        name, eq, value = flag.partition("=")
        if eq and any(ch.isspace() or ch in "\"'\\" for ch in value):
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            flag = f'{name}="{escaped}"'
        parts.append(flag)
    return " ".join(parts)


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
    if accepted_since is not None and accepted_since <= version <= Version(NEWEST_MEASURED):
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


_BAD_VALUE = re.compile(r"Couldn't interpret value (?P<value>.*) for flag (?P<name>[A-Za-z0-9_]+)\.")
_HELP_ROW = r"^\t--{name}=[^\t]*\t+(?P<type>\w+)\t"


def bad_value_from_abort(stderr: str) -> tuple[str, str, str | None] | None:
    """(flag name, value, its type if XLA's printed flag table names it) when XLA refused a value."""
    found = _BAD_VALUE.search(stderr)
    if not found:
        return None
    row = re.search(_HELP_ROW.format(name=re.escape(found["name"])), stderr, re.M)
    return found["name"], found["value"], row["type"] if row else None


def unknown_from_abort(stderr: str, variable: str = "XLA_FLAGS") -> list[str] | None:
    """Flag names XLA reported as unknown in its fatal abort message, if that is what `stderr` holds.

    `variable` is the environment variable named in the message: XLA_FLAGS, or
    TF_XLA_FLAGS for TensorFlow's own XLA flags (the same parser, the same abort)."""
    for line in stderr.splitlines():
        marker = line.find("Unknown flag")
        if marker != -1 and f" {variable}:" in line[marker:]:
            listed = line[marker:].split(f" {variable}:", 1)[1].strip()
            # 0.4.30 appends a double space and a garbled copy of the remaining flags.
            listed = listed.split("  ", 1)[0].split()
            return [flag_name(flag) for flag in listed if flag.startswith("-")]
    return None


def split_flag(flag: str) -> tuple[str, str | None]:
    """`--name=value` -> (name, value); `--name` -> (name, None)."""
    name, eq, value = flag.lstrip("-").partition("=")
    return name, (value if eq else None)


def check_flag_value(name: str, value: str | None) -> str | None:
    """What is wrong with `value` (None: given bare) for XLA flag `name`; None when fine or of unknown type."""
    problem = value_problem(f"--{name}" if value is None else f"--{name}={value}")
    return None if problem is None else f"--{name}{'' if value is None else '=' + value}: {problem[0]}"
