"""`xlatools replay`, end to end: request -> checked plan -> replay bundle -> records.

prepare() resolves the modules, probes every interpreter and checks every XLA flag
against it BEFORE anything is written, so bad input leaves no half-made bundle.
execute_replay() runs inside the one bundle lifecycle (bundle.bundle_session, kind `replay`):
the test and then each reference per module in the target interpreters (module_runs.py), then the
summary and the final manifest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.errors import EXIT_MISSING, EXIT_OK, EXIT_TIMEOUT, EnvironmentMissing, Interrupted, UsageError
from xlatools.records.replay import ReplayManifest
from xlatools.records.run import InterpreterFacts
from xlatools.replay.module_runs import replay_module
from xlatools.replay.plan import ReplayPlan, ReplayRequest, label_references, plan_replay
from xlatools.replay.outcome import exit_code, replay_notes, table
from xlatools.replay.sources import ModuleSource
from xlatools.replay.workers import ReplayPool
from xlatools.run.target import ProbedInterpreter
from xlatools.vocab import Platform, SourceForm, Status

if TYPE_CHECKING:
    from xlatools.console import Reporter


HELPERS_NOTE = "left out as jax helper modules"


@dataclass
class PreparedReplay:
    plan: ReplayPlan
    targets: dict[str, ProbedInterpreter]  # by interpreter path
    flag_checks: dict[str, dict[str, str]]


@dataclass
class ReplayResult:
    record: ReplayManifest  # the final manifest
    exit_code: int
    table: str  # one row per module


def _dump_flags(presets: list[str]) -> list[tuple[str, str]]:
    if not presets:
        return []
    from xlatools.run.presets.catalog import Catalog

    catalog = Catalog.load()
    flags = []
    for ref in presets:
        try:
            preset = catalog.get(ref, kind="dump")  # a run preset (gpu:f32, log:...) is refused, never ignored
        except UsageError as exc:
            raise UsageError(f"--dump {ref}: {exc.message}", hint=exc.hint) from None
        flags += [(flag, f"--dump {ref}") for flag in preset.xla_flags if not flag.startswith("--xla_dump_to")]
    return flags


def check_flags(target: ProbedInterpreter, flags: list[str], sources: dict[str, str]) -> dict[str, str]:
    from xlatools.run.flags import flag_name
    from xlatools.run.frontend_checks import refuse_unknown

    return refuse_unknown(target, {flag_name(f): f for f in flags}, sources)


def prepare(request: ReplayRequest, resolved: tuple[str, list] | None = None) -> PreparedReplay:
    """`resolved`: (source kind, modules) when the caller already has them (a repro pack)."""
    from xlatools.replay.settings import adopt_run_settings, of_bundle
    from xlatools.replay.sources import resolve
    from xlatools.run import target as targets

    from xlatools.replay.full_precision import refuse_without_text

    kind, modules = resolved or resolve(
        request.source, request.modules, request.include_all, request.process, request.snapshot
    )
    _validate(modules, request.source_from, literals=request.inputs is None)
    refuse_without_text(modules, request.precision, str(request.source_from))
    request, notes = adopt_run_settings(request, of_bundle(request.source) if kind == "bundle" else None)
    plan = plan_replay(request, kind, modules, _dump_flags(request.dump))
    plan.notes += notes
    if resolved is None and kind in ("bundle", "dump") and not request.modules and not request.include_all:
        from xlatools.replay.sources import helpers_left_out

        helpers = helpers_left_out(request.source, request.process)
        if helpers:
            plan.notes.append(f"{HELPERS_NOTE}: {', '.join(helpers)} (replay them with --all)")
    found: dict[str, ProbedInterpreter] = {}
    checks: dict[str, dict[str, str]] = {}
    for run in plan.runs:
        platform = run.platform
        target = found.get(run.python) or targets.probe(
            run.python, Platform.AUTO if platform == Platform.GPU else platform
        )
        found[run.python] = target
        if platform == Platform.GPU and not target.has_gpu:
            raise EnvironmentMissing(
                f"--platform gpu: {run.python} sees no GPU (jax backend: {target.backend or 'none'})",
                hint="install a CUDA/ROCm jaxlib plugin there, or use --platform cpu / auto",
            )
        plan.notes += _deterministic(request, run, target)
    label_references(plan.runs, {python: target.jax for python, target in found.items() if target.jax})
    for run in plan.runs:
        checks[run.label] = check_flags(found[run.python], run.xla_flags, run.flag_sources)
    return PreparedReplay(plan, found, checks)


def _deterministic(request: ReplayRequest, run, target: ProbedInterpreter) -> list[str]:
    """The deterministic mode's flags on a run that compiles for a GPU (run/determinism.py): notes."""
    from xlatools.run.determinism import SOURCE, applies, gated, mode_flags

    if request.deterministic is False or not applies(run.platform, target):
        return []
    flags, notes = gated(target, mode_flags(), run.xla_flags)
    run.xla_flags = flags + list(run.xla_flags)
    run.flag_sources.update({flag: SOURCE for flag in flags})
    if flags and run.role == "test":
        notes.append(f"deterministic mode ({' '.join(flags)}): GPU compiles repeat; --nondeterministic turns it off")
    return notes


def _validate(modules: list[ModuleSource], source_from: SourceForm, literals: bool) -> None:
    """Read every .pb once now, so a damaged file (or a missing form) is a clear error before any bundle exists."""
    from xlatools.replay.hloproto import read_module_proto, read_snapshot
    from xlatools.replay.refusals import refuse_elided_text, refuse_optimised_only

    for module in modules:
        if source_from != "auto" and getattr(module, str(source_from)) is None:
            raise UsageError(
                f"--from {source_from}: module {module.label} has no {source_from} form",
                hint=f"it has: {', '.join(module.files()) or 'nothing'}; --from auto uses what there is",
            )
        if module.proto:
            read_module_proto(module.proto)
        if module.snapshot:
            read_snapshot(module.snapshot, literals)
        refuse_optimised_only(module)  # after reading: a damaged file says so first
        refuse_elided_text(module, source_from)


def target_versions(targets: dict[str, ProbedInterpreter]) -> dict[str, InterpreterFacts]:
    """The interpreters a replay (or reduction) uses, as its manifest records them."""
    return {python: target.facts() for python, target in targets.items()}


def replay_record(prepared: PreparedReplay, argv: list[str]) -> ReplayManifest:
    """The manifest of a replay that is starting (status "running")."""
    from xlatools.records.base import invoked

    plan = prepared.plan
    record = ReplayManifest(
        source=os.path.realpath(plan.request.source),
        plan=plan.record(),
        targets=target_versions(prepared.targets),
        flag_checks=prepared.flag_checks,
    )
    return invoked(record, argv)


def execute_replay(
    prepared: PreparedReplay,
    out_root: Path,
    argv: list[str],
    reporter: Reporter,
    caller_env: dict[str, str] | None = None,
    then: Callable[[Path, ReplayManifest], None] | None = None,
) -> ReplayResult:
    """Replay every module into a fresh bundle. Ctrl-C ends it as an interrupted bundle holding
    the modules replayed so far. `then(bundle, record)`: more work recorded in the same bundle before
    it is finished (replay --isolate)."""
    from xlatools.bundle import bundle_session

    caller_env = dict(os.environ if caller_env is None else caller_env)
    plan = prepared.plan
    with bundle_session(out_root, replay_record(prepared, argv), name=plan.name, reporter=reporter) as session:
        record: ReplayManifest = session.record
        pool = ReplayPool(session.path / "workers", enabled=caller_env.get("XLATOOLS_REPLAY_WORKERS", "1") != "0")
        try:
            for source in plan.modules:
                record.modules.append(
                    replay_module(prepared, source, session.path / "modules" / source.slug, caller_env, reporter, pool)
                )
            pool.close()
            if then is not None:
                then(session.path, record)
        except (KeyboardInterrupt, Interrupted):  # the session records it; the summary shows what was replayed
            _write_summary(session.path, prepared, Status.INTERRUPTED, Interrupted.exit_code, table(record.modules))
            raise Interrupted(f"interrupted; partial replay bundle: {session.path}") from None
        finally:
            pool.close()
        if record.plan is not None:
            record.plan.notes += replay_notes(record.modules)
        code = exit_code([m.outcome for m in record.modules])
        status = {EXIT_OK: Status.OK, EXIT_TIMEOUT: Status.TIMEOUT, EXIT_MISSING: Status.ERROR}.get(code, Status.FAILED)
        rendered = table(record.modules)
        _write_summary(session.path, prepared, status, code, rendered)
        session.finish(status, exit_code=code)
    return ReplayResult(session.record, code, rendered)


def _write_summary(bundle: Path, prepared: PreparedReplay, status: Status, code: int, rendered: str) -> None:
    from xlatools.fsutil import atomic_write_text
    from xlatools.redact import redact_text

    versions = ", ".join(f"jaxlib {t.jaxlib} ({python})" for python, t in prepared.targets.items())
    atomic_write_text(
        bundle / "summary.txt",
        redact_text(
            f"status: {status} (exit {code})\nsource: {prepared.plan.request.source}\ntargets: {versions}\n\n{rendered}\n"
        ),
    )
