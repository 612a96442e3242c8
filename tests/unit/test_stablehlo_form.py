"""Each module's StableHLO (issue 40): jax's file names, tying them to the dump's modules, the dumping run that writes
them, the replay source that reads them, the form order, the summary's form line and triage's hand-over (pure, or
files in a temp folder; no jax)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlatools.records.replay import ModuleRecord, RunRecord
from xlatools.records.replay_runs import LoadedFrom
from xlatools.replay.outcome import describe_form
from xlatools.replay.sources import ModuleSource, from_file, resolve
from xlatools.run.jax_ir import dump_root_of, dump_to, parse_jax_ir_name, stablehlo_files, tie
from xlatools.vocab import ReplayOutcome, SourceForm

BEFORE = "HloModule jit_f\n\nENTRY main.3 {\n  ROOT Arg_0.1 = f32[3]{0} parameter(0)\n}\n"


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("jax_ir1_jit_f_compile.mlir", (1, "jit_f")),  # jax 0.4.24-0.4.31
        ("jax_ir0012_jit_f_compile.mlir", (12, "jit_f")),  # 0.4.35 ... 0.12
        ("jax_ir3_jit_f.mlir", (3, "jit_f")),  # <= 0.4.23: no stage
        ("jax_ir3_jit_compile_compile.mlir", (3, "jit_compile")),
        ("jax_ir3_jit_Model.apply_compile.mlir", (3, "jit_Model.apply")),
        ("jax_ir3_jit_f_export.mlir", None),  # jax.export's, never compiled
        ("jax_ir3_jit_f_verification.mlir", None),
        ("module.mlir", None),
    ],
)
def test_jax_file_names(name, parsed):
    assert parse_jax_ir_name(name) == parsed


def test_tie_by_name_and_compile_order_and_never_a_guess():
    modules = [(0, "jit_f"), (2, "jit_g"), (4, "jit_f"), (6, "jit_h")]
    files = [(10, "jit_f", "b"), (2, "jit_f", "a"), (5, "jit_g", "g"), (7, "jit_h", "h1"), (8, "jit_h", "h2")]
    # the k-th file of a name (by jax's counter, not by listing order) is the k-th module of that name (by id);
    # jit_h: two files for one module (a dump cut short, a module regex): left untied
    assert tie(modules, files) == {0: "a", 4: "b", 2: "g"}


def _dump(tmp_path: Path, jaxlib_folders: bool = False) -> Path:
    bundle = tmp_path / "bundle"
    dump = bundle / "xla_dump"
    dump.mkdir(parents=True)
    for module_id, name in ((0, "jit_iota"), (1, "jit_f"), (2, "jit_f")):
        (dump / f"module_{module_id:04d}.{name}.before_optimizations.txt").write_text(BEFORE.replace("jit_f", name))
        (dump / f"module_{module_id:04d}.{name}.cpu_after_optimizations.txt").write_text(BEFORE)
    (dump / "module_0002.jit_f.snapshot.7.pb").write_bytes(b"")
    if jaxlib_folders:  # jaxlib 0.8.0-0.10.0: XLA's own, named by the time, not by the module id
        for stamp, name in ((1795828628806, "jit_iota"), (1795828628952, "jit_f"), (1795828629469, "jit_f")):
            (dump / f"{name}_{stamp}").mkdir()
            (dump / f"{name}_{stamp}" / "module.mlir").write_text("module @x {}")
        return bundle
    (bundle / "jax_ir").mkdir()
    for n, name in ((0, "jit_iota"), (1, "jit_f"), (2, "jit_f")):
        (bundle / "jax_ir" / f"jax_ir{n}_{name}_compile.mlir").write_text(f"module @{name} {{}}")
    (bundle / "jax_ir" / "jax_ir3_jit_f_export.mlir").write_text("module @jit_f {}")
    return bundle


def test_a_bundles_modules_get_their_stablehlo(tmp_path):
    from xlatools.run.dumps import index_dump

    bundle = _dump(tmp_path)
    index = index_dump(bundle / "xla_dump")
    assert {m.id: m.stablehlo for m in index.modules.values()} == {
        0: "../jax_ir/jax_ir0_jit_iota_compile.mlir",
        1: "../jax_ir/jax_ir1_jit_f_compile.mlir",
        2: "../jax_ir/jax_ir2_jit_f_compile.mlir",
    }
    assert index.modules[2].summary().stablehlo == "../jax_ir/jax_ir2_jit_f_compile.mlir"  # the manifest's
    # XLA's own module_NNNN.<name>/module.mlir (jaxlib >= 0.10.1) is the module's, by its id
    (bundle / "xla_dump" / "module_0001.jit_f").mkdir()
    (bundle / "xla_dump" / "module_0001.jit_f" / "module.mlir").write_text("module @jit_f {}")
    assert index_dump(bundle / "xla_dump").modules[1].stablehlo == "module_0001.jit_f/module.mlir"


def test_jaxlib_0_8_to_0_10_0_folders_and_process_folders(tmp_path):
    bundle = _dump(tmp_path, jaxlib_folders=True)
    modules = [(0, "jit_iota"), (1, "jit_f"), (2, "jit_f")]
    others = [p.relative_to(bundle / "xla_dump").as_posix() for p in (bundle / "xla_dump").rglob("module.mlir")]
    assert stablehlo_files(bundle / "xla_dump", modules, others) == {
        0: "jit_iota_1795828628806/module.mlir",
        1: "jit_f_1795828628952/module.mlir",
        2: "jit_f_1795828629469/module.mlir",
    }
    # a multi-process run: xla_dump/p1 and jax_ir/p1
    (tmp_path / "mp" / "xla_dump" / "p1").mkdir(parents=True)
    (tmp_path / "mp" / "jax_ir" / "p1").mkdir(parents=True)
    (tmp_path / "mp" / "jax_ir" / "p1" / "jax_ir0_jit_f_compile.mlir").write_text("")
    assert stablehlo_files(tmp_path / "mp" / "xla_dump" / "p1", [(4, "jit_f")], []) == {
        4: "../../jax_ir/p1/jax_ir0_jit_f_compile.mlir"
    }
    assert dump_root_of(tmp_path / "mp" / "jax_ir" / "p1" / "x.mlir") == tmp_path / "mp" / "xla_dump" / "p1"


def test_a_dumping_run_writes_it_where_the_xla_dump_does_not():
    assert dump_to("jax", "0.4.26") == dump_to("jax", "0.10.0") == dump_to("jax", None) == "{bundle}/jax_ir"
    assert dump_to("jax", "0.10.1") is dump_to("jax", "0.12.0.1") is None  # module_NNNN.<name>/module.mlir
    assert dump_to("tensorflow", "0.4.26") is None and dump_to("jax", "not a version") == "{bundle}/jax_ir"


def test_run_plan_sets_jax_dump_ir_to_and_the_user_wins():
    from xlatools.run.plan import ProfileRun, RunRequest, plan_run, settle_request
    from xlatools.run.presets.catalog import Catalog
    from xlatools.run.program import Program

    def env(jaxlib, **kwargs):
        request = RunRequest(program=Program("script", "/x/prog.py"), python="/py", **kwargs)
        profile = ProfileRun()
        planned = plan_run(settle_request(request, profile), profile, Catalog.load(), {}, Path("/w"), jaxlib=jaxlib)
        return planned.bind(Path("/b")).child_env({})

    assert env("0.4.30", presets=["dump:snapshots"])["JAX_DUMP_IR_TO"] == "/b/jax_ir"
    assert "JAX_DUMP_IR_TO" not in env("0.10.2", presets=["dump:snapshots"])  # XLA's dump has it
    assert "JAX_DUMP_IR_TO" not in env("0.4.30")  # no dump, nothing to tie it to
    assert env("0.4.30", dump=True, env=["JAX_DUMP_IR_TO="])["JAX_DUMP_IR_TO"] == ""  # --env wins (off)


def test_a_single_stablehlo_file_is_its_modules_with_its_snapshot(tmp_path):
    bundle = _dump(tmp_path)
    file = bundle / "jax_ir" / "jax_ir2_jit_f_compile.mlir"
    kind, (source,) = resolve(file, [], False)
    assert kind == "file" and (source.id, source.name, source.mlir) == (2, "jit_f", file)
    assert source.snapshot == bundle / "xla_dump" / "module_0002.jit_f.snapshot.7.pb"  # the module's inputs
    assert source.text is None and source.run_stem == bundle / "xla_dump" / "module_0002.jit_f"  # the run's files
    untied = from_file(bundle / "jax_ir" / "jax_ir3_jit_f_export.mlir")
    assert untied.id is None and untied.snapshot is None
    # XLA's module.mlir replayed alone: its module's snapshot too
    (bundle / "xla_dump" / "module_0002.jit_f").mkdir()
    (bundle / "xla_dump" / "module_0002.jit_f" / "module.mlir").write_text("module @jit_f {}")
    alone = from_file(bundle / "xla_dump" / "module_0002.jit_f" / "module.mlir")
    assert alone.snapshot == source.snapshot and alone.run_stem == source.run_stem


def test_a_bundle_replays_its_stablehlo_first_and_reduce_its_text(tmp_path):
    from xlatools.replay.jobs import prepare_materials

    bundle = _dump(tmp_path)
    _, modules = resolve(bundle, ["1"], False)
    assert modules[0].mlir == bundle / "jax_ir" / "jax_ir1_jit_f_compile.mlir"
    auto = prepare_materials(modules[0], SourceForm.AUTO, tmp_path / "a")
    assert [auto.module["kind"], *(a["kind"] for a in auto.alternatives)] == ["mlir", "text"]
    edits = prepare_materials(modules[0], SourceForm.AUTO, tmp_path / "b", hlo_first=True)
    assert [edits.module["kind"], *(a["kind"] for a in edits.alternatives)] == ["text", "mlir"]


def test_the_summary_names_the_form():
    record = ModuleRecord(name="jit_f", id=1, outcome=ReplayOutcome.OK, compiled_as_run=True)
    record.runs.append(
        RunRecord(label="test", python="/py", loaded_from=LoadedFrom(kind="mlir", path="/b/jax_ir/x.mlir", how="mlir"))
    )
    assert describe_form(record) == "StableHLO (x.mlir), the run's own module"
    record.compiled_as_run = False
    assert describe_form(record) == "StableHLO (x.mlir), not the run's module (see its notes)"


def test_the_advice_names_the_file_or_the_preset():
    from xlatools.replay.module_runs import stablehlo_advice

    record = ModuleRecord(name="jit_f", id=1)
    record.runs.append(RunRecord(label="test", python="/py", loaded_from=LoadedFrom(kind="text", path="t", how="t")))
    with_file = ModuleSource(name="jit_f", id=1, mlir=Path("/b/jax_ir/jax_ir1_jit_f_compile.mlir"))
    assert "`xlatools replay /b/jax_ir/jax_ir1_jit_f_compile.mlir`" in stablehlo_advice(record, with_file)
    assert "--preset dump:snapshots" in stablehlo_advice(record, ModuleSource(name="jit_f", id=1))


def test_triage_hands_over_the_stablehlo_that_reproduces(monkeypatch, tmp_path):
    from xlatools.errors import TextNotTheRunsModule
    from xlatools.records.base import read_record
    from xlatools.records.triage import TriageState
    from xlatools.triage import handover
    from xlatools.triage.report import render
    from xlatools.triage.stages import StageProblem
    from xlatools.vocab import StageStatus

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "reduce-triage" / "triage.json"
    state = read_record(fixture, TriageState, "triage state")
    state.reduce = state.isolate = None
    stablehlo = f"{state.dumps.first_bad.bundle}/jax_ir/jax_ir1_jit_f_compile.mlir"
    refused = TextNotTheRunsModule(
        "cannot reduce module 0001 jit_f: ...",
        stablehlo=stablehlo,
        differs="compiled a different module than the run (24 instructions after optimisation against the run's 2)",
    )
    monkeypatch.setattr(handover, "_replayed_from", lambda state, path: None)  # not seen to reproduce: no hand-over
    with pytest.raises(TextNotTheRunsModule):
        handover.hand_over(state, refused)
    with pytest.raises(TextNotTheRunsModule):
        handover.hand_over(state, TextNotTheRunsModule("cannot reduce module 0001 jit_f: ..."))  # no StableHLO
    monkeypatch.setattr(handover, "_replayed_from", lambda state, path: "3/3 elements differ (max abs error 0.925)")
    said = handover.hand_over(state, refused)
    assert state.reduce is not None and state.reduce.handed_over == stablehlo and state.reduce.note == said
    assert said.startswith("not reduced: the HLO text of module") and "no longer reproduces (it compiled" in said
    assert "the module itself, as its StableHLO jax_ir1_jit_f_compile.mlir" in said and "3/3 elements" in said
    with pytest.raises(StageProblem) as skipped:
        handover.skip_isolation(state.reduce)
    assert skipped.value.status == StageStatus.SKIPPED and skipped.value.exit_code == 0
    issue = render(state, "check.py", ["triage"], None)
    assert f"- Minimal module: {said}" in issue
    assert "xlatools replay runs/" in issue and "jax_ir/jax_ir1_jit_f_compile.mlir --python" in issue


def test_a_snapshot_alone_pairs_with_its_modules_stablehlo(tmp_path):
    bundle = _dump(tmp_path)
    snapshot = bundle / "xla_dump" / "module_0002.jit_f.snapshot.7.pb"
    source = from_file(snapshot)  # (an empty file: read only when replayed)
    assert (
        source.snapshot == snapshot
        and source.text == bundle / "xla_dump" / "module_0002.jit_f.before_optimizations.txt"
    )
    assert source.mlir == bundle / "jax_ir" / "jax_ir2_jit_f_compile.mlir"


def test_a_run_warns_of_modules_left_untied(tmp_path):
    from xlatools.run.dump_expect import missing_dump_kinds
    from xlatools.run.dumps import index_dump

    bundle = _dump(tmp_path)
    assert missing_dump_kinds([], index_dump(bundle / "xla_dump")) == []
    (bundle / "jax_ir" / "jax_ir2_jit_f_compile.mlir").unlink()  # jit_f: 2 modules, 1 file
    (warning,) = missing_dump_kinds([], index_dump(bundle / "xla_dump"))
    assert "tied to 2 module(s) (0001 jit_f, 0002 jit_f)" in warning and "may not be the run's own module" in warning
    # a module of a name jax wrote nothing of (not compiled through jax) is left alone
    (bundle / "xla_dump" / "module_0003.fusion.before_optimizations.txt").write_text(BEFORE.replace("jit_f", "fusion"))
    assert len(missing_dump_kinds([], index_dump(bundle / "xla_dump"))) == 1
