"""`xlatools run`, end to end: inputs -> checked RunPlan -> bundle -> outcome.

prepare() resolves everything and checks every flag against the target BEFORE
anything is written, so bad input leaves no half-made bundle. execute_plan()
creates the bundle, writes the manifest (running), runs the program, indexes
the dumps and writes the final manifest and summary.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlatools import __version__
from xlatools.errors import EnvironmentMissing
from xlatools.run.plan import ProfileRun, RunPlan, RunRequest, plan_run
from xlatools.run.target import Target

MANIFEST_SCHEMA = "xlatools.run/1"


@dataclass
class Prepared:
    plan: RunPlan
    target: Target
    flag_checks: dict[str, str]


def profile_run(profile_ref: str | None) -> tuple[ProfileRun, dict[str, Any]]:
    """The profile's run section as plain data, plus its preset definitions."""
    if not profile_ref:
        return ProfileRun(), {}
    from xlatools.profiles import load
    from xlatools.profiles.explain import explain_rows

    resolved = load(profile_ref)
    run = resolved.profile.run
    provenance = [{"key": k, "value": v, "origin": o} for k, v, o in explain_rows(resolved)]
    info = ProfileRun(
        name=resolved.profile.name,
        file=str(resolved.path),
        chain=list(resolved.chain),
        presets=list(run.presets),
        dump_preset=run.dump_preset,
        env=dict(run.env),
        xla_flags=list(run.xla_flags),
        platform=run.platform,
        python=run.python,
        timeout=run.timeout,
        frontend=run.frontend,
        resolved=resolved.profile.model_dump(mode="json"),
        provenance=provenance,
    )
    return info, dict(run.define_presets)


def prepare(request: RunRequest, profile: ProfileRun, define_presets: dict[str, Any], caller_env: dict[str, str],
            cwd: Path) -> Prepared:
    from xlatools.run.frontend_checks import check_flags, probe_target
    from xlatools.run.presets.catalog import Catalog

    catalog = Catalog.load(define_presets, f"profile {profile.name} (run.define_presets)")
    platform = request.platform or profile.platform or "auto"
    target = probe_target(request, profile, catalog, platform)
    if platform == "gpu" and not target.has_gpu:
        raise EnvironmentMissing(
            f"--platform gpu: {request.python} sees no GPU ({target.frontend} backend: {target.backend or 'none'})",
            hint="install a CUDA/ROCm jaxlib plugin there, or use --platform cpu / auto",
        )
    plan = plan_run(request, profile, catalog, caller_env, cwd, jaxlib=target.jaxlib, gpu_platform=target.gpu_platform(),
                    frontend=target.frontend)
    return Prepared(plan, target, check_flags(target, plan))


def env_record(plan: RunPlan) -> list[dict[str, Any]]:
    from xlatools.bundle import REDACTED, redact_env

    rows = []
    for change in plan.env_changes:
        hidden = redact_env({change.name: "x"})[change.name] == REDACTED
        rows.append({
            "name": change.name,
            "value": REDACTED if hidden and change.value is not None else change.value,
            "previous": REDACTED if hidden and change.previous is not None else change.previous,
            "source": change.source,
        })
    return rows


def redact_argv(argv: list[str]) -> list[str]:
    """argv with the values of secret-looking `--env NAME=VALUE` items hidden."""
    from xlatools.bundle import redact_env

    out, after_env = [], False
    for item in argv:
        prefix = ""
        if item.startswith("--env="):
            prefix, item = "--env=", item[len("--env="):]
        if (after_env or prefix) and "=" in item:
            name, value = item.split("=", 1)
            item = f"{name}={redact_env({name: value})[name]}"
        out.append(prefix + item)
        after_env = item == "--env"
    return out


def manifest_data(plan: RunPlan, target: Target, status: str, argv: list[str], **extra: Any) -> dict[str, Any]:
    from xlatools.bundle import host_info

    return {
        "status": status,
        "manifest_schema": MANIFEST_SCHEMA,
        "xlatools_version": __version__,
        "command": "xlatools " + " ".join(redact_argv(argv)),
        "argv": redact_argv(argv),
        "program": plan.to_json()["program"],
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
        "presets": plan.presets,
        "xla_flags": plan.xla_flags,
        "xla_flag_sources": plan.xla_flag_sources,
        "overridden_flags": plan.overridden_flags,
        "env_changes": env_record(plan),
        "timeout": plan.timeout,
        "notes": plan.notes,
        **extra,
    }


def _copy_program(plan: RunPlan, bundle_path: Path) -> None:
    if not plan.copy_files:
        return
    target = bundle_path / "program"
    target.mkdir(exist_ok=True)
    for name in plan.copy_files:
        try:
            shutil.copy2(name, target / Path(name).name)
        except OSError:
            pass  # the program may have been removed meanwhile; the run says so itself


def _summary_text(manifest: dict[str, Any], modules_table: str) -> str:
    lines = [
        f"status: {manifest['status']} (exit {manifest.get('exit_code')})",
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


def modules_table(dump_index) -> str:
    rows = [("id", "module", "instr before", "instr after", "passes", "snapshots", "files", "bytes")]
    for module in sorted(dump_index.modules.values(), key=lambda m: m.id):
        rows.append((f"{module.id:04d}", module.short_name, _n(module.instructions_before), _n(module.instructions_after),
                     str(len(module.steps)), str(module.snapshots), str(len(module.files)), str(module.bytes)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def execute_plan(prepared: Prepared, out_root: Path, argv: list[str], caller_env: dict[str, str],
                 archive: bool = False, echo_stdout_to_stderr: bool = False) -> tuple[dict[str, Any], int, str]:
    """Run the plan into a fresh bundle; returns the final manifest, the exit code and the module table."""
    from xlatools.bundle import Bundle
    from xlatools.console import group
    from xlatools.run.dumps import index_dump
    from xlatools.run.process import execute

    # Absolute: the program may change directory, and the paths go into XLA_FLAGS and the manifest.
    bundle = Bundle.create(Path(os.path.abspath(out_root)), prepared.plan.name, "run")
    plan = prepared.plan.bind(bundle.path)
    if plan.dump_dir:
        Path(plan.dump_dir).mkdir(parents=True, exist_ok=True)
    for change in plan.env_changes:  # folders that presets point into, e.g. torch_xla/tensors.txt
        if change.value and change.value.startswith(str(bundle.path)) and change.name != "XLA_FLAGS":
            Path(change.value).parent.mkdir(parents=True, exist_ok=True)
    _copy_program(plan, bundle.path)
    base = manifest_data(plan, prepared.target, "running", argv, bundle=str(bundle.path),
                         flag_checks=prepared.flag_checks)
    bundle.write_manifest(base)
    say(f"==> {plan.program.label} -> {bundle.path}")
    stdout = sys.stderr.buffer if echo_stdout_to_stderr else sys.stdout.buffer
    with group(f"{plan.program.label} output", announce=False):
        result = execute(plan.argv, plan.child_env(caller_env), plan.cwd, bundle.path / "stdout.log",
                         bundle.path / "stderr.log", plan.timeout, stdout, sys.stderr.buffer)

    dump = None
    table = ""
    if plan.dump_dir and Path(plan.dump_dir).is_dir():
        index = index_dump(Path(plan.dump_dir))
        dump = {"dir": "xla_dump", "layout": index.layout, **index.totals(),
                # Without file lists: the manifest's `files` index has them, with sizes and hashes.
                "modules": [m.to_json(with_files=False) for m in sorted(index.modules.values(), key=lambda m: m.id)]}
        table = modules_table(index) if index.modules else ""
    smoke = _read_json(bundle.path / "smoke_results.json")
    final = {**base, "status": result.status, "exit_code": result.exit_code, "returncode": result.returncode,
             "started": result.started, "finished": result.finished, "duration_s": result.duration,
             "dump": dump, "smoke": smoke}
    from xlatools.fsutil import atomic_write_text

    atomic_write_text(bundle.path / "summary.txt", _summary_text(final, table))
    final["files"] = bundle.file_index()
    bundle.write_manifest(final)
    if archive:
        final["archive"] = str(bundle.archive())
    return final, result.exit_code, table


def say(text: str) -> None:
    """A plain line on stderr. Not rich: its import alone costs more than the rest of a run's start-up."""
    sys.stdout.flush()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _read_json(path: Path) -> Any:
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
