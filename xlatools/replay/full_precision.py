"""A replay's runs at full precision (`--precision`; the rewrite and the verdict are replay/precision.py's).

`highest`: the test runs the module with its dots and convolutions raised; the references run it as it is.
`auto`: a test that differs from its references is run once more, raised, on the same inputs, and compared
with the outputs the references already computed: `precision` or `mismatch` (outcome.finish_module).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.errors import UsageError
from xlatools.records.replay import ModuleRecord, RunRecord
from xlatools.replay.jobs import Materials
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import Platform, PrecisionMode

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.replay.execute import PreparedReplay

RAISED_FILE = "module.highest.txt"


def refuse_without_text(modules: list[ModuleSource], mode: PrecisionMode | None, source_from: str) -> None:
    """--precision highest rewrites the module's text before the test reads it: every module needs whole text
    (checked before a bundle exists)."""
    from xlatools.replay.refusals import elides_constants

    if mode != PrecisionMode.HIGHEST:
        return
    if source_from not in ("auto", "text"):
        raise UsageError(
            f"--precision highest with --from {source_from}: the test reads the module's HLO text, raised",
            hint="--from auto or --from text, or --precision auto",
        )
    for module in modules:
        if module.text is None or (source_from == "auto" and elides_constants(module.text)):
            raise UsageError(
                f"--precision highest: module {module.label} has no HLO text to raise "
                f"(it has: {', '.join(module.files()) or 'nothing'})",
                hint="dump with --preset dump:hlo, or use --precision auto (it rewrites the text the test read)",
            )


def highest_materials(materials: Materials, folder: Path, record: ModuleRecord, atol: float, rtol: float) -> Materials:
    """--precision highest: the test's materials, the module text raised (written next to the runs)."""
    from xlatools.fsutil import atomic_write_text
    from xlatools.replay import precision

    as_text = next((m.module for m in materials.forms() if m.module.get("kind") == "text"), None)  # StableHLO first
    path = Path(as_text["path"]) if as_text else None
    if path is None:
        raise UsageError(
            f"--precision highest: module {record.label} is not read as text here",
            hint="--from text, or --precision auto",
        )
    text, raised = precision.raise_precision(path.read_text(errors="replace"))
    atomic_write_text(folder / RAISED_FILE, text)
    record.precision = precision.check(PrecisionMode.HIGHEST, raised, atol, rtol, str(folder / RAISED_FILE))
    record.notes.append(record.precision.note or "")
    # Nothing to fall back on: a module the target cannot read raised must not run as compiled instead.
    return replace(materials, module={"kind": "text", "path": str(folder / RAISED_FILE)}, alternatives=[])


def second_run(
    prepared: PreparedReplay,
    materials: Materials,
    record: ModuleRecord,
    folder: Path,
    caller_env: dict[str, str],
    reporter: Reporter,
) -> None:
    """auto: when the test differs from its references, run it again at full precision and classify."""
    from xlatools.fsutil import atomic_write_text
    from xlatools.replay import precision

    plan = prepared.plan
    request = plan.request
    test = record.test
    references = [run for run in record.runs if run.label != "test"]
    as_compiled = [c for run in references for c in run.comparisons]
    snapshot_ok = all(c.ok for c in (test.comparisons if test else []))
    # A snapshot (or recorded result) a GPU computed holds that compile's own reduced-precision rounding, with
    # the kernels its autotuning chose: measured on an H200, a replay in the deterministic mode differs from the
    # run's recorded jit_step by 2e-3. Its difference does not keep the test from the full-precision run.
    on_gpu = plan.test.platform != Platform.CPU and prepared.targets[plan.test.python].gpu_platform() is not None
    gpu_snapshot_differs = on_gpu and not snapshot_ok
    snapshot_ok = snapshot_ok or on_gpu
    if (
        test is None
        or test.failure
        or not precision.needs_second_run(request.precision, record.outcome, as_compiled, snapshot_ok)
    ):
        return
    test_dir = folder / "test"
    read = test_dir / "module.txt"
    if not read.is_file() or not (test_dir / "inputs.npz").is_file():
        return
    text, raised = precision.raise_precision(read.read_text(errors="replace"))
    if not raised:
        return  # every dot and convolution was at full precision: the mismatch stands as it is
    atomic_write_text(folder / RAISED_FILE, text)
    check = precision.check(PrecisionMode.AUTO, raised, request.atol, request.rtol, str(folder / RAISED_FILE))
    check.as_compiled = as_compiled
    check.run = _highest_run(prepared, record, folder, references, len(raised), caller_env, reporter)
    if check.run is not None:
        check.highest = list(check.run.comparisons)
    check.verdict, why = precision.classify(as_compiled, check.run)
    check.note = f"{check.verdict}: {why}; raised {len(raised)}: {precision.names(raised)}"
    if gpu_snapshot_differs:
        check.note += (
            "; the snapshot differs too, as a GPU compile below full precision computed it (listed, "
            "not judged: compare with --reference cpu)"
        )
    record.precision = check
    record.notes.append(check.note)


def _highest_run(
    prepared: PreparedReplay,
    record: ModuleRecord,
    folder: Path,
    references: list[RunRecord],
    raised: int,
    caller_env: dict[str, str],
    reporter: Reporter,
) -> RunRecord | None:
    """The test run again on the raised text, its outputs compared with what the references computed
    (None: no reference left outputs to compare with)."""
    from xlatools.replay.jobs import run_job

    plan, request, test_dir = prepared.plan, prepared.plan.request, folder / "test"
    expected = [
        {"label": run.label, "path": str(Path(run.dir) / "outputs.npz")}
        for run in references
        if not run.failure and run.dir and (Path(run.dir) / "outputs.npz").is_file()
    ]
    if not expected:
        return None
    config = replace(plan.test, label="test-highest")
    gpu = prepared.targets[config.python].gpu_platform()
    reporter.step(f"{record.label}: test again with {raised} dot/convolution(s) at full precision")
    return run_job(
        replace(request, inputs=str(test_dir / "inputs.npz")),
        Materials({"kind": "text", "path": str(folder / RAISED_FILE)}),
        config,
        folder / config.label,
        None,
        config.env(caller_env, gpu, None),
        expected_files=expected,
    )
