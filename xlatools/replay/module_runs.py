"""One module of a replay: its test run (from the form that compiles the run's own module) and each reference,
then the notes and the verdict of its record (execute.py runs every module of a replay through here)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.records.replay import ModuleRecord
from xlatools.replay.plan import ReplayPlan
from xlatools.replay.outcome import finish_module, no_result_note
from xlatools.replay.sources import ModuleSource
from xlatools.replay.workers import ReplayPool
from xlatools.vocab import PrecisionMode, SourceForm

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.replay.execute import PreparedReplay


def replay_module(
    prepared: PreparedReplay,
    source: ModuleSource,
    folder: Path,
    caller_env: dict[str, str],
    reporter: Reporter,
    pool: ReplayPool | None = None,
) -> ModuleRecord:
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
    # the references' never are raised
    tested = (
        highest_materials(materials, folder, record, request.atol, request.rtol)
        if request.precision == PrecisionMode.HIGHEST
        else materials
    )
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
    if (
        materials.snapshot_args is not None
        and materials.snapshot_result is None
        and not is_unoptimized(source.snapshot)
    ):
        references = any(run.role != "test" for run in plan.runs)
        record.notes.append(no_result_note(_aliased(source), _run_death(source.snapshot), references))
    second_run(prepared, materials, finish_module(record), folder, caller_env, reporter)
    return _no_verdict_unless_as_run(finish_module(record), source)


def _test_as_run(
    prepared: PreparedReplay,
    materials,
    source: ModuleSource,
    run,
    run_dir: Path,
    record: ModuleRecord,
    reporter: Reporter,
    job,
):
    """The test run, from the first form that compiles the run's own module (`--from auto`; an explicit form is
    kept whatever it compiles): (its record, the materials it used). Each difference is a note of the module.
    Only on the jaxlib that dumped the module (its run manifest says which): another compiles its own module."""
    from xlatools.replay.as_run import RunFiles, compare_with_run, dumped_by, run_files

    request, plan_kind, plan_source = prepared.plan.request, prepared.plan.source_kind, prepared.plan.request.source
    jaxlib = prepared.targets[run.python].jaxlib
    same = (
        request.as_run is not False and plan_kind != "pack" and jaxlib is not None and dumped_by(plan_source) == jaxlib
    )
    files = run_files(source.run_stem) if same else RunFiles()
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
                record.notes.append(
                    f"--from auto: its {' and '.join(tried)} form compiled a different module than the "
                    f"run; replayed from its {kind} form, which compiles the run's"
                )
            return done, form
        tried.append(kind)
        record.notes.append(f"from its {kind} form: {differs}")
    assert first is not None
    record.notes = [n for n in record.notes if not n.startswith("from its ")] + [
        n for n in record.notes if n.startswith("from its ")
    ][:1]  # the first form's difference says it
    if len(forms) > 1:
        record.notes.append("no form of the module compiles the run's module here: the first is kept")
    record.compiled_as_run = False
    return first


def _say_inputs(plan: ReplayPlan, source: ModuleSource, materials, record: ModuleRecord) -> None:
    """A file replayed alone says that its sibling snapshot gave the inputs; a test that failed on made-up random
    inputs says that they may be why."""
    from xlatools.vocab import ReplayOutcome

    given = Path(plan.request.source)
    if (
        plan.source_kind == "file"
        and source.snapshot
        and materials.snapshot_args is not None
        and given != source.snapshot
    ):
        compared = " and its recorded result is the expected output" if materials.snapshot_result else ""
        record.notes.append(f"inputs: the arguments of its sibling snapshot {source.snapshot.name}{compared}")
    test = record.test
    if (
        plan.request.inputs in (None, "random")
        and materials.snapshot_args is None
        and test
        and test.failure == ReplayOutcome.RUNTIME_ERROR
    ):
        record.notes.append(
            "the test ran on random inputs: a runtime check of the program (an equinox error, a "
            "checkify) may trip on values it never sees; dump with --preset dump:snapshots and replay "
            "the snapshot (or --inputs FILE)"
        )


def _no_verdict_unless_as_run(record: ModuleRecord, source: ModuleSource) -> ModuleRecord:
    """A snapshot's result comes from the run's compiled module: when the replay compiled another, comparing with
    it says nothing about the module (cannot run, exit 3), only about xlatools' replay."""
    from xlatools.vocab import ReplayOutcome

    failing = [c for c in record.comparisons if not c.ok]
    if (
        record.compiled_as_run is False
        and record.outcome == ReplayOutcome.MISMATCH
        and failing
        and all(c.against == "snapshot" for c in failing)
    ):
        record.outcome, record.failed_run = ReplayOutcome.CANNOT_RUN, "test"
        record.notes.append(
            "the snapshot's result was computed by the run's module, which this replay did not "
            f"compile: its mismatch is not a verdict ({stablehlo_advice(record, source)})"
        )
    return record


def stablehlo_advice(record: ModuleRecord, source: ModuleSource) -> str:
    """What to replay instead of a form that does not compile the run's module: the module's StableHLO file, or how
    to get one (every dumping run keeps it), or a reference where its StableHLO does not do it either."""
    loaded = record.test.loaded_from if record.test else None
    if source.mlir is None:
        return (
            "this dump holds no StableHLO of the module, which compiles the run's own module: run the program "
            "again with `xlatools run --preset dump:snapshots` (every dumping run keeps it, in jax_ir/ or "
            "module_NNNN.<name>/module.mlir) and replay that bundle, or compare with --reference-python"
        )
    if loaded is not None and loaded.kind == "mlir":
        return "its StableHLO does not compile the run's module either: compare with --reference-python"
    return f"replay the module's StableHLO: `xlatools replay {source.mlir}`, or compare with --reference-python"


def _aliased(source: ModuleSource) -> bool | None:
    """Whether the module's outputs alias its inputs (donation), from its HloModule line; None: no text."""
    if source.text is None:
        return None
    try:
        with open(source.text, errors="replace") as handle:
            return "input_output_alias=" in handle.readline()
    except OSError:
        return None


def _run_death(snapshot: Path | None) -> str | None:
    """`died by SIGSEGV`, `was stopped at its timeout`: how the run that wrote `snapshot` ended, when that
    explains a missing result (its manifest, one or two folders above the dump); None otherwise."""
    from xlatools.errors import XlaToolsError
    from xlatools.records import read_bundle
    from xlatools.records.run import RUN_KINDS, RunManifest

    if snapshot is None:
        return None
    for bundle in list(Path(snapshot).parents)[1:3]:
        if (bundle / "manifest.json").is_file():
            try:
                record = read_bundle(bundle, kinds=RUN_KINDS)
            except (XlaToolsError, OSError):
                return None
            if isinstance(record, RunManifest) and record.signal:
                return f"died by {record.signal}"
            if isinstance(record, RunManifest) and str(record.status) in ("timeout", "interrupted"):
                return f"was stopped ({record.status})"
            return None
    return None
