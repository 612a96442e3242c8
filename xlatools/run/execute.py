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
from typing import Any, Literal

from xlatools.errors import EnvironmentMissing, Interrupted, TimedOut
from xlatools.run.plan import ProfileRun, RunPlan, RunRequest, plan_run
from xlatools.run.process import ProgramResult
from xlatools.run.target import Target

HEARTBEAT_SECONDS = float(os.environ.get("XLATOOLS_HEARTBEAT_S", "15"))  # quiet runs: a line this often


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
    """Settle the request against the profile, probe the target, plan, and check every flag. Writes nothing."""
    from dataclasses import replace

    from xlatools.run import target as targets
    from xlatools.run.frontend_checks import check_flags, probe_target
    from xlatools.run.plan import settle_request
    from xlatools.run.presets.catalog import Catalog

    catalog = Catalog.load(define_presets, f"profile {profile.name} (run.define_presets)")
    request = settle_request(request, profile)
    request = replace(request, python=targets.resolve_python(request.python))
    platform = request.platform
    target = probe_target(request, profile, catalog, platform)
    if platform == "gpu" and not target.has_gpu:
        raise EnvironmentMissing(
            f"--platform gpu: {request.python} sees no GPU ({target.frontend} backend: {target.backend or 'none'})",
            hint="install a CUDA/ROCm jaxlib plugin there, or use --platform cpu / auto",
        )
    plan = plan_run(request, profile, catalog, caller_env, cwd, jaxlib=target.jaxlib, gpu_platform=target.gpu_platform(),
                    frontend=target.frontend)
    return Prepared(plan, target, check_flags(target, plan))


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


ExitCodeMode = Literal["xlatools", "program"]


def exit_code_for(result: ProgramResult, mode: ExitCodeMode = "xlatools") -> int:
    """xlatools' exit code: its own outcomes keep 0/3/124/130; any failure of the program is 1,
    unless `mode` is "program" (the program's own status, 128+N for signal N)."""
    codes = {"ok": 0, "timeout": TimedOut.exit_code, "interrupted": Interrupted.exit_code,
             "error": EnvironmentMissing.exit_code}
    if result.status in codes:
        return codes[result.status]
    if mode == "program" and result.returncode is not None:
        return result.returncode if result.returncode >= 0 else 128 - result.returncode
    return 1


@dataclass
class RunOutcome:
    manifest: dict[str, Any]
    exit_code: int
    table: str  # the module table, empty when nothing was dumped


def execute_plan(prepared: Prepared, out_root: Path, argv: list[str], caller_env: dict[str, str],
                 archive: bool = False, echo_stdout_to_stderr: bool = False,
                 exit_code_mode: ExitCodeMode = "xlatools") -> RunOutcome:
    """Run the plan into a fresh bundle. The program starts as soon as the bundle exists; the
    program copy and the first manifest are written while it runs. A record we cannot write
    (disk full) stops the run: exit 3, with the manifest saying so when at all possible."""
    from xlatools.bundle import Bundle
    from xlatools.console import group
    from xlatools.run.process import execute
    from xlatools.run.record import manifest_data, numerics_env

    # Absolute: the program may change directory, and the paths go into XLA_FLAGS and the manifest.
    bundle = Bundle.create(Path(os.path.abspath(out_root)), prepared.plan.name, "run")
    plan = prepared.plan.bind(bundle.path)
    base = manifest_data(plan, prepared.target, "running", argv, bundle=str(bundle.path),
                         flag_checks=prepared.flag_checks, numerics_env=numerics_env(plan.child_env(caller_env)))
    try:
        _make_folders(plan, bundle.path)

        def on_start(_proc) -> None:
            _copy_program(plan, bundle.path)
            bundle.write_manifest(base)

        say(f"==> {plan.program.label} -> {bundle.path}" + ("  (quiet: output in the bundle's logs)" if plan.quiet else ""))
        stdout = sys.stderr.buffer if echo_stdout_to_stderr else sys.stdout.buffer
        with group(f"{plan.program.label} output", announce=False):
            result = execute(plan.argv, plan.child_env(caller_env), plan.cwd, bundle.path / "stdout.log",
                             bundle.path / "stderr.log", plan.timeout, None if plan.quiet else stdout,
                             None if plan.quiet else sys.stderr.buffer, on_start=on_start,
                             heartbeat=HEARTBEAT_SECONDS if plan.quiet else None)
        outcome = _finish(plan, bundle, base, result, exit_code_for(result, exit_code_mode))
    except OSError as exc:
        _record_failure(bundle, base, exc)
        raise EnvironmentMissing(f"cannot write the run's records in {bundle.path}: {exc.strerror or exc}"
                                 + (f" ({exc.filename})" if exc.filename else ""),
                                 hint="free some space (or pick another --out) and run again") from None
    if result.status == "error":
        raise EnvironmentMissing(f"{result.error}; the program was stopped. Record: {bundle.path}",
                                 hint="free some space (or pick another --out) and run again")
    if archive:
        outcome.manifest["archive"] = str(bundle.archive())
    return outcome


def _make_folders(plan: RunPlan, bundle_path: Path) -> None:
    if plan.dump_dir:
        Path(plan.dump_dir).mkdir(parents=True, exist_ok=True)
    for change in plan.env_changes:  # folders that presets point into, e.g. torch_xla/tensors.txt
        if change.value and change.value.startswith(str(bundle_path)) and change.name != "XLA_FLAGS":
            Path(change.value).parent.mkdir(parents=True, exist_ok=True)


def _finish(plan: RunPlan, bundle, base: dict[str, Any], result: ProgramResult, exit_code: int) -> RunOutcome:
    """Index the dumps, check the log switches, write summary.txt and the final manifest."""
    from xlatools.fsutil import atomic_write_text
    from xlatools.run.dumps import index_dump, modules_table
    from xlatools.run.record import flag_fault_notes, outcome_fields, summary_text, unmatched_vmodule

    dump, table = None, ""
    if plan.dump_dir and Path(plan.dump_dir).is_dir():
        index = index_dump(Path(plan.dump_dir))
        dump = {"dir": "xla_dump", "layout": index.layout, **index.totals(),
                # Without file lists: the manifest's `files` index has them, with sizes and hashes.
                "modules": [m.to_json(with_files=False) for m in sorted(index.modules.values(), key=lambda m: m.id)]}
        table = modules_table(index) if index.modules else ""
    notes = list(base["notes"])
    for pattern in unmatched_vmodule(bundle.path / "stderr.log", plan.vmodule_patterns()):
        notes.append(f"vmodule pattern {pattern!r} matched no log line: patterns match source file names without "
                     "the extension (e.g. hlo_pass_pipeline); check the name, or whether that file logs at that level")
    if result.status != "ok":
        notes += flag_fault_notes(bundle.path / "stderr.log", plan.xla_flags)
    final = {**base, **outcome_fields(result, exit_code), "notes": notes, "dump": dump,
             "smoke": _read_json(bundle.path / "smoke_results.json")}
    atomic_write_text(bundle.path / "summary.txt", summary_text(final, table), durable=False)
    final["files"] = bundle.file_index()
    bundle.write_manifest(final)
    return RunOutcome(final, exit_code, table)


def _record_failure(bundle, base: dict[str, Any], exc: OSError) -> None:
    """Best effort: the manifest says the run ended in an error (the bundle keeps a reserve for this)."""
    try:
        bundle.write_manifest({**base, "status": "error", "exit_code": EnvironmentMissing.exit_code,
                               "error": f"cannot write the run's records: {exc.strerror or exc}"}, use_reserve=True)
    except OSError:
        pass


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
