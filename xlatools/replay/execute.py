"""`xlatools replay`, end to end: request -> checked plan -> replay bundle -> records.

prepare() resolves the modules, probes every interpreter and checks every XLA flag
against it BEFORE anything is written, so bad input leaves no half-made bundle.
execute_replay() runs inside the one bundle lifecycle (bundle.bundle_session, kind `replay`):
the test and then each reference per module in the target interpreters, then the summary
and the final manifest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools import __version__
from xlatools.errors import EXIT_MISSING, EXIT_OK, EXIT_TIMEOUT, EnvironmentMissing, Interrupted, UsageError
from xlatools.records.replay import ModuleRecord, ReplayManifest
from xlatools.records.run import InterpreterFacts
from xlatools.replay.plan import ReplayPlan, ReplayRequest, plan_replay
from xlatools.replay.records import NO_RESULT, exit_code, finish_module, replay_notes, table
from xlatools.replay.sources import ModuleSource
from xlatools.replay.workers import ReplayPool
from xlatools.run.target import Target
from xlatools.vocab import Platform, PrecisionMode, SourceForm, Status

if TYPE_CHECKING:
    from xlatools.console import Reporter


HELPERS_NOTE = "left out as jax helper modules"


@dataclass
class PreparedReplay:
    plan: ReplayPlan
    targets: dict[str, Target]  # by interpreter path
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
    return [(flag, f"--dump {ref}") for ref in presets for flag in catalog.get(ref, kind="dump").xla_flags
            if not flag.startswith("--xla_dump_to")]


def check_flags(target: Target, flags: list[str], sources: dict[str, str]) -> dict[str, str]:
    from xlatools.run.flags import flag_name
    from xlatools.run.frontend_checks import refuse_unknown

    return refuse_unknown(target, {flag_name(f): f for f in flags}, sources)


def prepare(request: ReplayRequest, resolved: tuple[str, list] | None = None) -> PreparedReplay:
    """`resolved`: (source kind, modules) when the caller already has them (a repro pack)."""
    from xlatools.replay.settings import adopt_run_settings, of_bundle
    from xlatools.replay.sources import resolve
    from xlatools.run import target as targets

    from xlatools.replay.full_precision import refuse_without_text

    kind, modules = resolved or resolve(request.source, request.modules, request.include_all, request.process)
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
    found: dict[str, Target] = {}
    checks: dict[str, dict[str, str]] = {}
    for run in plan.runs:
        platform = run.platform
        target = found.get(run.python) or targets.probe(run.python, Platform.AUTO if platform == Platform.GPU else platform)
        found[run.python] = target
        if platform == Platform.GPU and not target.has_gpu:
            raise EnvironmentMissing(f"--platform gpu: {run.python} sees no GPU (jax backend: {target.backend or 'none'})",
                                     hint="install a CUDA/ROCm jaxlib plugin there, or use --platform cpu / auto")
        plan.notes += _deterministic(request, run, target)
        checks[run.label] = check_flags(target, run.xla_flags, run.flag_sources)
    return PreparedReplay(plan, found, checks)


def _deterministic(request: ReplayRequest, run, target: Target) -> list[str]:
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
            raise UsageError(f"--from {source_from}: module {module.label} has no {source_from} form",
                             hint=f"it has: {', '.join(module.files()) or 'nothing'}; --from auto uses what there is")
        if module.proto:
            read_module_proto(module.proto)
        if module.snapshot:
            read_snapshot(module.snapshot, literals)
        refuse_optimised_only(module)  # after reading: a damaged file says so first
        refuse_elided_text(module, source_from)


def replay_module(prepared: PreparedReplay, source: ModuleSource, folder: Path, caller_env: dict[str, str],
                  reporter: Reporter, pool: ReplayPool | None = None) -> ModuleRecord:
    """Every run of one module; through `pool`'s long-lived workers when given (not when the test dumps:
    its dump folder is the module's own)."""
    from xlatools.replay.full_precision import highest_materials, second_run
    from xlatools.replay.hloproto import is_unoptimized
    from xlatools.replay.jobs import input_source, prepare_materials, run_job
    from xlatools.replay.refusals import judge_callback, refuse_multi_device

    plan = prepared.plan
    record = ModuleRecord(name=source.name, id=source.id, files=source.files())
    if refuse_multi_device(source, record, plan.test.python):
        return finish_module(record)
    request = plan.request
    materials = prepare_materials(source, request.source_from, folder, literals=request.inputs is None)
    if request.as_run is False:  # a pack's outcome is recorded as its repro run will replay it: no run files there
        materials.compile_options = {}
    record.input_source = input_source(request.inputs, request.seed, source.snapshot)
    if request.inputs is None and record.input_source.kind == "random":
        record.notes.append(f"no snapshot or recorded arguments for this module: random inputs (seed {request.seed})")
    tested = (highest_materials(materials, folder, record, request.atol, request.rtol)
              if request.precision == PrecisionMode.HIGHEST else materials)  # the references' never are raised
    test_dir = None
    for run in plan.runs:
        run_dir = folder / run.label
        gpu = prepared.targets[run.python].gpu_platform()
        dumps = plan.dumps and run.role == "test"
        env = run.env(caller_env, gpu, str(run_dir / "xla_dump") if dumps else None)
        reporter.step(f"{source.label}: {run.label} ({run.python})")
        given = tested if run.role == "test" else materials  # only the test's dots are raised (--precision highest)

        def job(form, where, run=run, env=env, test_dir=test_dir, dumps=dumps):  # a worker's, unless the test dumps
            def one_shot():
                return run_job(request, form, run, where, test_dir, env)
            return one_shot() if pool is None or dumps else pool.run(request, form, run, where, test_dir, env, one_shot)

        if run.role == "test":
            done, used = _test_as_run(prepared, given, source, run, run_dir, record, reporter, job)
            if given is materials:  # the references run the form the test kept (never the raised text)
                materials = used
            record.runs.append(done)
            test_dir = Path(done.dir) if done.dir else run_dir
            continue
        record.runs.append(job(given, run_dir))
    judge_callback(source, record)
    _say_inputs(plan, source, materials, record)
    if materials.snapshot_args is not None and materials.snapshot_result is None and not is_unoptimized(source.snapshot):
        record.notes.append(NO_RESULT)  # an unoptimised snapshot never holds one
    second_run(prepared, materials, finish_module(record), folder, caller_env, reporter)
    return _no_verdict_unless_as_run(finish_module(record))


def _test_as_run(prepared: PreparedReplay, materials, source: ModuleSource, run, run_dir: Path, record: ModuleRecord,
                 reporter: Reporter, job):
    """The test run, from the first form that compiles the run's own module (`--from auto`; an explicit form is
    kept whatever it compiles): (its record, the materials it used). Each difference is a note of the module.
    Only on the jaxlib that dumped the module (its run manifest says which): another compiles its own module."""
    from xlatools.replay.as_run import RunFiles, compare_with_run, dumped_by, run_files

    request, plan_kind, plan_source = prepared.plan.request, prepared.plan.source_kind, prepared.plan.request.source
    jaxlib = prepared.targets[run.python].jaxlib
    same = request.as_run is not False and plan_kind != "pack" and jaxlib is not None and dumped_by(plan_source) == jaxlib
    files = run_files(source.text or source.proto) if same else RunFiles()
    forms = materials.forms() if request.source_from == SourceForm.AUTO and files.optimized else [materials]
    first, tried = None, list[str]()
    for index, form in enumerate(forms):
        kind = form.module["kind"]
        folder = run_dir if index == 0 else run_dir.with_name(f"{run_dir.name}-from-{kind}-{index}")
        if index:
            reporter.step(f"{source.label}: {run.label} again, from its {kind} form")
        done = job(form, folder)
        compiled = files.optimized is not None and (folder / "optimized.txt").is_file()
        if index == 0:
            first = (done, form)
        elif not compiled or done.failure:
            continue  # a later form that does not compile or run here is not the run's module either
        differs = compare_with_run(files, folder / "optimized.txt") if compiled else None
        if not differs:
            record.compiled_as_run = True if compiled else None
            if tried:
                record.notes = [n for n in record.notes if not n.startswith("from its ")]
                record.notes.append(f"--from auto: its {' and '.join(tried)} form compiled a different module than the "
                                    f"run; replayed from its {kind} form, which compiles the run's")
            return done, form
        tried.append(kind)
        record.notes.append(f"from its {kind} form: {differs}")
    assert first is not None
    record.notes = [n for n in record.notes if not n.startswith("from its ")] + \
        [n for n in record.notes if n.startswith("from its ")][:1]  # the first form's difference says it
    if len(forms) > 1:
        record.notes.append("no form of the module compiles the run's module here: the first is kept")
    record.compiled_as_run = False
    return first


def _say_inputs(plan: ReplayPlan, source: ModuleSource, materials, record: ModuleRecord) -> None:
    """A file replayed alone says that its sibling snapshot gave the inputs; a test that failed on made-up random
    inputs says that they may be why."""
    from xlatools.vocab import ReplayOutcome

    given = Path(plan.request.source)
    if plan.source_kind == "file" and source.snapshot and materials.snapshot_args is not None and given != source.snapshot:
        compared = " and its recorded result is the expected output" if materials.snapshot_result else ""
        record.notes.append(f"inputs: the arguments of its sibling snapshot {source.snapshot.name}{compared}")
    test = record.test
    if plan.request.inputs in (None, "random") and materials.snapshot_args is None and test and \
            test.failure == ReplayOutcome.RUNTIME_ERROR:
        record.notes.append("the test ran on random inputs: a runtime check of the program (an equinox error, a "
                            "checkify) may trip on values it never sees; dump with --preset dump:snapshots and replay "
                            "the snapshot (or --inputs FILE)")


def _no_verdict_unless_as_run(record: ModuleRecord) -> ModuleRecord:
    """A snapshot's result comes from the run's compiled module: when the replay compiled another, comparing with
    it says nothing about the module (cannot run, exit 3), only about xlatools' replay."""
    from xlatools.vocab import ReplayOutcome

    failing = [c for c in record.comparisons if not c.ok]
    if record.compiled_as_run is False and record.outcome == ReplayOutcome.MISMATCH and failing and \
            all(c.against == "snapshot" for c in failing):
        record.outcome, record.failed_run = ReplayOutcome.CANNOT_RUN, "test"
        record.notes.append("the snapshot's result was computed by the run's module, which this replay did not "
                            "compile: its mismatch is not a verdict (replay the module's StableHLO, or compare with "
                            "--reference-python)")
    return record


def target_versions(targets: dict[str, Target]) -> dict[str, InterpreterFacts]:
    """The interpreters a replay (or reduction) uses, as its manifest records them."""
    return {python: target.facts() for python, target in targets.items()}


def replay_record(prepared: PreparedReplay, argv: list[str]) -> ReplayManifest:
    """The manifest of a replay that is starting (status "running")."""
    from xlatools.records.base import host_info
    from xlatools.redact import redact_argv

    plan = prepared.plan
    return ReplayManifest(xlatools_version=__version__, command="xlatools " + " ".join(redact_argv(argv)), argv=list(argv),
                          host=host_info(), source=os.path.realpath(plan.request.source), plan=plan.record(),
                          targets=target_versions(prepared.targets), flag_checks=prepared.flag_checks)


def execute_replay(prepared: PreparedReplay, out_root: Path, argv: list[str], reporter: Reporter,
                   caller_env: dict[str, str] | None = None,
                   then: Callable[[Path, ReplayManifest], None] | None = None) -> ReplayResult:
    """Replay every module into a fresh bundle. Ctrl-C ends it as an interrupted bundle holding
    the modules replayed so far. `then(bundle, record)`: more work recorded in the same bundle before
    it is finished (replay --isolate)."""
    from xlatools.bundle import bundle_session

    caller_env = dict(os.environ if caller_env is None else caller_env)
    plan = prepared.plan
    with bundle_session(out_root, replay_record(prepared, argv), name=plan.name) as session:
        record: ReplayManifest = session.record
        pool = ReplayPool(session.path / "workers", enabled=caller_env.get("XLATOOLS_REPLAY_WORKERS", "1") != "0")
        try:
            for source in plan.modules:
                record.modules.append(replay_module(prepared, source, session.path / "modules" / source.slug,
                                                    caller_env, reporter, pool))
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
    atomic_write_text(bundle / "summary.txt", redact_text(
        f"status: {status} (exit {code})\nsource: {prepared.plan.request.source}\ntargets: {versions}\n\n{rendered}\n"))
