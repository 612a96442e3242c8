"""What a run leaves behind, as data: the manifest, the summary text, the module table,
and what the logs say about the run's own switches (vmodule patterns that matched nothing)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

from xlatools import __version__
from xlatools.run.plan import RunPlan
from xlatools.run.process import ProgramResult
from xlatools.run.target import Target

MANIFEST_SCHEMA = "xlatools.run/1"
# absl / TF log lines: `I1123 03:07:28.491441   26219 hlo_pass_pipeline.cc:93] ...`
_LOG_SOURCE = re.compile(rb"^[IWEF]\d{4} [\d:.]+\s+\d+ (?P<file>[\w.\-]+)\.(?:cc|h|cpp|c):\d+\]")


def manifest_data(plan: RunPlan, target: Target, status: str, argv: list[str], **extra: Any) -> dict[str, Any]:
    """The manifest of a run that is starting (status "running"); outcome_fields() completes it."""
    from xlatools.bundle import host_info, redact_argv

    planned = plan.to_json()
    return {
        "status": status,
        "manifest_schema": MANIFEST_SCHEMA,
        "xlatools_version": __version__,
        "command": "xlatools " + " ".join(redact_argv(argv)),
        "argv": argv,
        "program": planned["program"],
        "program_argv": plan.argv,
        "cwd": plan.cwd,
        "host": host_info(),
        "interpreter": {"python": target.python, "python_version": target.python_version},
        "jax": {"jax": target.jax, "jaxlib": target.jaxlib, "backend": target.backend, "devices": target.devices,
                "plugins": target.plugins},
        "frontend": {"name": target.frontend, "version": target.frontend_version, "xla_source": target.xla_source,
                     "versions": target.versions, "tf_xla_flags": plan.tf_xla_flags},
        "platform": plan.platform,
        "profile": plan.profile,
        "presets": planned["presets"],
        "xla_flags": plan.xla_flags,
        "xla_flag_sources": plan.xla_flag_sources,
        "overridden_flags": planned["overridden_flags"],
        "env_changes": planned["env_changes"],
        "timeout": plan.timeout,
        "notes": plan.notes,
        **extra,
    }


# Variables that change a program's numbers (types, precisions, math libraries): recorded with every run.
NUMERICS_ENV = ("JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION", "JAX_DEFAULT_DTYPE_BITS", "JAX_NUMPY_DTYPE_PROMOTION",
                "NVIDIA_TF32_OVERRIDE", "TF_ENABLE_ONEDNN_OPTS", "XLA_FLAGS_FILE")


def numerics_env(env: dict[str, str]) -> dict[str, str]:
    """The NUMERICS_ENV variables set (non-empty) in `env`."""
    return {name: env[name] for name in NUMERICS_ENV if env.get(name) not in (None, "")}


def outcome_fields(result: ProgramResult, exit_code: int) -> dict[str, Any]:
    """The manifest fields of a finished program: xlatools' exit code and the program's own outcome."""
    return {"status": result.status, "exit_code": exit_code, "returncode": result.returncode,
            "signal": result.signal_name, "program_outcome": result.describe(), "error": result.error,
            "started": result.started, "finished": result.finished, "duration_s": result.duration}


def unmatched_vmodule(stderr_log: Path, patterns: list[str]) -> list[str]:
    """The vmodule patterns (file-name globs, as TF_CPP_VMODULE reads them) that no log line came from."""
    if not patterns:
        return []
    seen: set[str] = set()
    try:
        with open(stderr_log, "rb") as handle:
            for line in handle:
                found = _LOG_SOURCE.match(line)
                if found:
                    seen.add(found["file"].decode(errors="replace"))
    except OSError:
        return []
    return [p for p in patterns if not any(fnmatch.fnmatchcase(name, p) for name in seen)]


# Program deaths a dump flag causes, known from real runs: (flag, log text, what to say).
FLAG_FAULTS = (
    ("--xla_dump_hlo_snapshots", b"called on deleted or donated buffer",
     "the program died in --xla_dump_hlo_snapshots: jaxlib 0.4.x reads an execution's arguments for its snapshot after "
     "the run, when donated buffers (donate_argnums; Keras and many optax training steps donate) are gone. Dump without "
     "snapshots (--preset dump:passes --preset dump:proto instead of dump:full) or use jaxlib >= 0.5"),
)


def flag_fault_notes(stderr_log: Path, flags: list[str]) -> list[str]:
    """What a failed program's log says about a dump flag that killed it (FLAG_FAULTS)."""
    wanted = [(text, note) for flag, text, note in FLAG_FAULTS if any(f.split("=")[0] == flag for f in flags)]
    if not wanted:
        return []
    try:
        with open(stderr_log, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - (1 << 20)))
            tail = handle.read()
    except OSError:
        return []
    return [note for text, note in wanted if text in tail]


def summary_text(manifest: dict[str, Any], modules_table: str) -> str:
    lines = [
        f"status: {manifest['status']} (xlatools exit {manifest.get('exit_code')}; program {manifest.get('program_outcome')})",
        f"program: {manifest['program']['label']}",
        f"{_frontend_line(manifest)} on {manifest['jax']['backend']}"
        f" ({manifest['interpreter']['python']})",
        f"presets: {', '.join(p['kind'] + ':' + p['name'] for p in manifest['presets']) or '-'}",
        f"XLA_FLAGS: {' '.join(manifest['xla_flags']) or '-'}",
        *([f"TF_XLA_FLAGS: {' '.join(manifest['frontend']['tf_xla_flags'])}"] if manifest["frontend"]["tf_xla_flags"] else []),
        f"duration: {manifest.get('duration_s')} s",
    ]
    lines += [f"note: {note}" for note in manifest["notes"]]
    if modules_table:
        lines += ["", modules_table]
    return "\n".join(lines) + "\n"


def _frontend_line(manifest: dict[str, Any]) -> str:
    frontend = manifest.get("frontend") or {"name": "jax"}
    if frontend["name"] == "jax":
        return f"jax {manifest['jax']['jax']} / jaxlib {manifest['jax']['jaxlib']}"
    return f"{frontend['name']} {frontend['version']} ({frontend['xla_source']})"
