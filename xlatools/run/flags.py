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
            hint=f"put the flags themselves into {variable}" + (", or pass them with --xla-flag" if variable == "XLA_FLAGS" else ""),
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
