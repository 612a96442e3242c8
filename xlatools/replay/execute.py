"""`xlatools replay`, end to end: request -> checked plan -> replay bundle -> records.

prepare() resolves the modules, probes every interpreter and checks every XLA flag
against it BEFORE anything is written, so bad input leaves no half-made bundle.
execute_replay() creates the bundle (kind `replay`), runs the test and then each
reference per module in the target interpreters, and writes manifest and summary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlatools import __version__
from xlatools.errors import EnvironmentMissing, Interrupted, UsageError
from xlatools.replay.plan import ReplayPlan, ReplayRequest, plan_replay
from xlatools.replay.records import ModuleRecord, exit_code, module_outcome, table
from xlatools.replay.sources import ModuleSource
from xlatools.run.target import Target

MANIFEST_SCHEMA = "xlatools.replay/1"


@dataclass
class Prepared:
    plan: ReplayPlan
    targets: dict[str, Target]  # by interpreter path
    flag_checks: dict[str, dict[str, str]]


def _dump_flags(presets: list[str]) -> list[tuple[str, str]]:
    if not presets:
        return []
    from xlatools.run.presets.catalog import Catalog

    catalog = Catalog.load()
    return [(flag, f"--dump {ref}") for ref in presets for flag in catalog.get(ref, kind="dump").xla_flags
            if not flag.startswith("--xla_dump_to")]


def check_flags(target: Target, flags: list[str], sources: dict[str, str]) -> dict[str, str]:
    from xlatools.run.flags import flag_name
    from xlatools.run.frontend_checks import refuse_unknown

    return refuse_unknown(target, {flag_name(f): f for f in flags}, sources)


def prepare(request: ReplayRequest, resolved: tuple[str, list] | None = None) -> Prepared:
    """`resolved`: (source kind, modules) when the caller already has them (a repro pack)."""
    from xlatools.replay.sources import resolve
    from xlatools.run import target as targets

    kind, modules = resolved or resolve(request.source, request.modules, request.include_all)
    _validate(modules, request.source_from, literals=request.inputs is None)
    request, notes = adopt_run_settings(request, kind)
    plan = plan_replay(request, kind, modules, _dump_flags(request.dump))
    plan.notes += notes
    found: dict[str, Target] = {}
    checks: dict[str, dict[str, str]] = {}
    for run in plan.runs:
        platform = run.platform
        target = found.get(run.python) or targets.probe(run.python, "auto" if platform == "gpu" else platform)
        found[run.python] = target
        if platform == "gpu" and not target.has_gpu:
            raise EnvironmentMissing(f"--platform gpu: {run.python} sees no GPU (jax backend: {target.backend or 'none'})",
                                     hint="install a CUDA/ROCm jaxlib plugin there, or use --platform cpu / auto")
        checks[run.label] = check_flags(target, run.xla_flags, run.flag_sources)
    return Prepared(plan, found, checks)


def adopt_run_settings(request: ReplayRequest, kind: str) -> tuple[ReplayRequest, list[str]]:
    """A run bundle's compile flags and numerics variables go into the replay (the request's own win)."""
    from dataclasses import replace

    from xlatools.replay.settings import of_bundle
    from xlatools.run.flags import flag_name

    settings = of_bundle(request.source) if kind == "bundle" else None
    if settings is None:
        return request, []
    own = {flag_name(f) for f in request.xla_flags}
    flags = [f for f in settings.xla_flags if flag_name(f) not in own] + list(request.xla_flags)
    env = {**settings.env, **request.env}
    notes = [f"the run's {what} ({', '.join(items)}) apply here too" for what, items in
             (("XLA flags", [f for f in settings.xla_flags if flag_name(f) not in own]),
              ("numerics variables", [f"{k}={v}" for k, v in settings.env.items() if k not in request.env])) if items]
    return replace(request, xla_flags=flags, env=env), notes


def _validate(modules, source_from: str, literals: bool) -> None:
    """Read every .pb once now, so a damaged file (or a missing form) is a clear error before any bundle exists."""
    from xlatools.replay.hloproto import read_module_proto, read_snapshot
    from xlatools.replay.sources import refuse_elided_text, refuse_optimised_only

    for module in modules:
        if source_from != "auto" and getattr(module, source_from) is None:
            raise UsageError(f"--from {source_from}: module {module.label} has no {source_from} form",
                             hint=f"it has: {', '.join(module.files()) or 'nothing'}; --from auto uses what there is")
        if module.proto:
            read_module_proto(module.proto)
        if module.snapshot:
            read_snapshot(module.snapshot, literals)
        refuse_optimised_only(module)  # after reading: a damaged file says so first
        refuse_elided_text(module, source_from)


def replay_module(prepared: Prepared, source: ModuleSource, folder: Path, caller_env: dict[str, str]) -> ModuleRecord:
    from xlatools.replay.jobs import job_spec, prepare_materials, run_job

    plan = prepared.plan
    record = ModuleRecord(source.name, source.id, source.files())
    if refuse_multi_device(source, record, plan.test.python):
        return record
    materials = prepare_materials(source, plan.request.source_from, folder, literals=plan.request.inputs is None)
    test_dir = None
    for run in plan.runs:
        run_dir = folder / run.label
        spec = job_spec(plan.request, materials, run, run_dir, test_dir)
        gpu = prepared.targets[run.python].gpu_platform()
        env = run.env(caller_env, gpu, str(run_dir / "xla_dump") if plan.dumps and run.role == "test" else None)
        say(f"==> {source.label}: {run.label} ({run.python})")
        record.runs.append(run_job(run, spec, run_dir, env, plan.request.timeout))
        if run.role == "test":
            test_dir = run_dir
    record.outcome, record.failed_run = module_outcome(record.runs)
    judge_callback(source, record)
    from xlatools.replay.hloproto import is_unoptimized

    if materials.snapshot_args is not None and materials.snapshot_result is None and not is_unoptimized(source.snapshot):
        record.notes.append(NO_RESULT)  # an unoptimised snapshot never holds one
    return record


NO_RESULT = ("the snapshot holds no result (XLA records none for an execution whose outputs alias donated inputs), so "
             "the outputs were not checked: compare with --reference-python or --reference cpu")


def refuse_multi_device(source: ModuleSource, record: ModuleRecord, python: str) -> bool:
    """Replay compiles and runs a module on one device; one made for several is cannot-run, said before launch."""
    from xlatools.replay.records import RunRecord
    from xlatools.replay.sources import multi_device

    counts = multi_device(source)
    if counts is None:
        return False
    message = (f"the module was compiled for several devices ({counts}: shard_map/pjit partitions or pmap replicas), "
               "and replay runs single-device modules only (a limit of xlatools' replay, not a finding about the module); "
               "run the program itself (xlatools run) to reproduce it")
    record.runs.append(RunRecord("test", python, failure="cannot-run", phase="load", message=message))
    record.outcome, record.failed_run = "cannot-run", "test"
    return True


def judge_callback(source: ModuleSource, record: ModuleRecord) -> None:
    """A module with a host callback calls back into the Python process that compiled it, which no replay has.
    Dormant callbacks (equinox's runtime error checks, a debug.print in a branch not taken) never run, and the
    module replays; a failure while running is what an executed callback does here, so no verdict: cannot-run."""
    from xlatools.replay.sources import host_callback

    target = host_callback(source)
    if target is None:
        return
    failed = next((run for run in record.runs if run.failure in ("crash", "runtime-error") and run.phase == "run"), None)
    if failed is None:
        record.notes.append(f"the module holds a host callback ({target}) that did not run here")
        return
    failed.message = (f"refused by design: the module called back into the Python process that ran it (custom call "
                      f"{target}: jax.pure_callback, io_callback, jax.debug.print or a debug callback), and a replay has "
                      f"no such process (here: {failed.failure}{' ' + failed.signal if failed.signal else ''}: "
                      f"{(failed.message or '')[:200]}); run the program itself (xlatools run) to reproduce it")
    failed.failure = "cannot-run"
    record.outcome, record.failed_run = module_outcome(record.runs)


def _targets_json(prepared: Prepared) -> dict[str, Any]:
    return {python: {k: t.to_json()[k] for k in ("python_version", "jax", "jaxlib", "backend", "devices", "plugins")}
            for python, t in prepared.targets.items()}


def execute_replay(prepared: Prepared, out_root: Path, argv: list[str],
                   caller_env: dict[str, str] | None = None) -> tuple[dict[str, Any], int, str]:
    """Replay every module into a fresh bundle: (final manifest, exit code, table)."""
    from xlatools.bundle import Bundle, host_info, utc_now
    from xlatools.fsutil import atomic_write_text

    caller_env = dict(os.environ if caller_env is None else caller_env)
    plan = prepared.plan
    bundle = Bundle.create(Path(os.path.abspath(out_root)), plan.name, "replay")
    base = {"status": "running", "manifest_schema": MANIFEST_SCHEMA, "xlatools_version": __version__,
            "command": "xlatools " + " ".join(argv), "argv": argv, "bundle": str(bundle.path), "host": host_info(),
            "source": str(plan.request.source), "plan": plan.to_json(), "targets": _targets_json(prepared),
            "flag_checks": prepared.flag_checks, "started": utc_now()}
    bundle.write_manifest(base)
    records: list[ModuleRecord] = []
    status = "failed"
    from xlatools.proctree import sigterm_as_interrupt

    try:
        with sigterm_as_interrupt():  # CI cancels with SIGTERM: finish the bundle as for Ctrl-C
            for source in plan.modules:
                records.append(replay_module(prepared, source, bundle.path / "modules" / source.slug, caller_env))
        code = exit_code([r.outcome for r in records])
        status = "ok" if code == 0 else ("timeout" if code == 124 else "failed")
    except (Interrupted, KeyboardInterrupt):
        status, code = "interrupted", Interrupted.exit_code
    except BaseException as exc:  # keep the bundle complete, then let the error speak
        bundle.write_manifest({**base, "status": "failed", "error": str(exc), "finished": utc_now(),
                               "modules": [r.to_json() for r in records]})
        raise
    rendered = table(records)
    final = {**base, "status": status, "exit_code": code, "finished": utc_now(),
             "modules": [r.to_json() for r in records]}
    versions = ", ".join(f"jaxlib {t.jaxlib} ({python})" for python, t in prepared.targets.items())
    atomic_write_text(bundle.path / "summary.txt",
                      f"status: {status} (exit {code})\nsource: {plan.request.source}\ntargets: {versions}\n\n{rendered}\n")
    final["files"] = bundle.file_index()
    bundle.write_manifest(final)
    if status == "interrupted":
        raise Interrupted(f"interrupted; partial replay bundle: {bundle.path}")
    return final, code, rendered


def say(text: str) -> None:
    import sys

    sys.stdout.flush()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
