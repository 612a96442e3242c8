"""The README's path, piece by piece without processes: `latest` per kind, following a replay bundle back to
its run, skipped modules and what a replay did not compare, NaN/Inf flags (issue 31)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from xlatools.bundle import Bundle, latest_name
from xlatools.errors import UsageError
from xlatools.records.follow import follow_to_run
from xlatools.records.replay import Comparison, ModuleRecord, OutputDigest, ReplayManifest
from xlatools.records.run import RunManifest
from xlatools.replay.outcome import NOTHING_COMPARED, RunRecord, exit_code, finish_module, replay_notes, table
from xlatools.vocab import ReplayOutcome, Status

OUT = ReplayOutcome


def test_latest_stays_on_runs_and_each_other_kind_has_its_own():
    assert [latest_name(k) for k in ("run", "build", "replay", "reduce", "debug")] == [
        "latest",
        "latest",
        "latest-replay",
        "latest-reduce",
        "latest-debug",
    ]


def _bundle(root: Path, record, name: str) -> Path:
    bundle = Bundle.create(root, name, record.kind)
    record.status = Status.OK
    bundle.write_manifest(record)
    return bundle.path


def test_a_replay_leaves_latest_on_the_run_and_records_where_it_came_from(tmp_path):
    run = _bundle(tmp_path, RunManifest(), "smoke")
    replay = _bundle(tmp_path, ReplayManifest(source=os.path.realpath(tmp_path / "latest")), "replay")
    assert (tmp_path / "latest").resolve() == run.resolve()
    assert (tmp_path / "latest-replay").resolve() == replay.resolve()
    followed = follow_to_run(tmp_path / "latest-replay")
    assert followed.path == run and "is a replay bundle; using the run it was made from" in followed.note
    assert follow_to_run(tmp_path / "latest").path == tmp_path / "latest" and follow_to_run(run).note is None
    # a file inside the run's dump is followed to the run too
    (run / "xla_dump").mkdir()
    inner = _bundle(tmp_path, ReplayManifest(source=str(run / "xla_dump" / "module_0000.jit_f.txt")), "one")
    assert follow_to_run(inner).path == run


def test_a_folder_or_file_where_latest_goes_is_left_untouched_and_said(tmp_path):
    (tmp_path / "latest").mkdir()
    (tmp_path / "latest" / "mine.txt").write_text("mine")
    (tmp_path / "latest-replay").write_text("mine too")
    run = _bundle(tmp_path, RunManifest(), "smoke")
    replay = Bundle.create(tmp_path, "replay", "replay")
    for link, bundle in (("latest", Bundle(run, "run", "smoke", "", "")), ("latest-replay", replay)):
        said = bundle.blocked_latest()
        assert said and str(tmp_path / link) in said and bundle.path.name in said
    assert [p.name for p in (tmp_path / "latest").iterdir()] == ["mine.txt"]
    assert (tmp_path / "latest-replay").read_text() == "mine too"
    assert Bundle.create(tmp_path / "other", "smoke", "run").blocked_latest() is None


def test_a_replay_whose_source_is_itself_or_gone_is_refused_by_name(tmp_path):
    replay = _bundle(tmp_path, ReplayManifest(source=None), "replay")
    data = json.loads((replay / "manifest.json").read_text())
    data["source"] = str(replay)  # an old manifest that recorded `latest`, which then pointed at the replay itself
    (replay / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match="a replay bundle, made from .*which is no run bundle here"):
        follow_to_run(replay)
    data["source"] = str(tmp_path / "gone")
    (replay / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match="no run bundle here"):
        follow_to_run(replay)


def _module(outcome: ReplayOutcome, comparisons=(), outputs=()) -> ModuleRecord:
    runs = [
        RunRecord(
            label="test",
            python="/py",
            failure=None if outcome == OUT.OK else outcome,
            comparisons=list(comparisons),
            outputs=list(outputs),
        )
    ]
    return finish_module(ModuleRecord(name="jit_f", id=len(outputs), runs=runs))


def test_skipped_modules_are_no_failure_unless_nothing_else_ran():
    assert exit_code([OUT.OK, OUT.SKIPPED]) == 0
    assert exit_code([OUT.SKIPPED]) == 3 and exit_code([OUT.SKIPPED, OUT.SKIPPED]) == 3
    assert exit_code([OUT.MISMATCH, OUT.SKIPPED]) == 1 and exit_code([OUT.CANNOT_RUN, OUT.OK]) == 3


def test_a_replay_says_what_it_skipped_and_that_it_compared_nothing():
    modules = [_module(OUT.OK), _module(OUT.SKIPPED)]
    notes = replay_notes(modules)
    assert notes[0].startswith("skipped (replay runs single-device modules only): ") and NOTHING_COMPARED in notes
    compared = Comparison(against="snapshot", ok=True, outputs=[], mismatches=0, elements=4)
    assert NOTHING_COMPARED not in replay_notes([_module(OUT.OK, comparisons=[compared])])
    assert replay_notes([_module(OUT.SKIPPED)]) == [notes[0]]  # nothing ran: no "nothing compared" either


def test_nan_and_inf_in_outputs_are_flagged_whatever_the_checks_say():
    outputs = [
        OutputDigest(shape=[2], dtype="float32", sha256="a", nan=0, inf=0),
        OutputDigest(shape=[3], dtype="float32", sha256="b", nan=2, inf=1),
    ]
    module = _module(OUT.OK, outputs=outputs)
    assert module.notes == ["outputs hold NaN/Inf (output 1: 2 NaN, 1 Inf)"]
    assert "NaN/Inf in outputs" in table([module])
    assert finish_module(module).notes == module.notes  # settled twice, noted once
    assert _module(OUT.OK, outputs=[OutputDigest(shape=[1], dtype="int32", sha256="c")]).notes == []


def test_a_pack_that_records_no_failure_has_nothing_to_reproduce():
    from xlatools.records.replay import PackModule
    from xlatools.replay.repro_verdict import EXIT_CODES, ReproResult, healthy_answer, nothing_to_reproduce
    from xlatools.vocab import ReproOutcome

    ok, bad = PackModule(name="jit_f", id=0, outcome=OUT.OK), PackModule(name="jit_g", id=1, outcome=OUT.MISMATCH)
    assert "records no failure" in nothing_to_reproduce([ok]) and nothing_to_reproduce([ok, bad]) is None
    same = healthy_answer([ok], ReproResult(outcome=ReproOutcome.REPRODUCED, reason="every module ..."))
    assert same.outcome == ReproOutcome.NOTHING_TO_REPRODUCE and same.exit_code == 5
    assert same.reason.endswith("replayed here: the same outcome")
    differs = healthy_answer([ok], ReproResult(outcome=ReproOutcome.NOT_REPRODUCED, reason="", differences=["x"]))
    assert differs.exit_code == 5 and differs.differences == ["x"] and "1 difference(s)" in differs.reason
    cannot = ReproResult(outcome=ReproOutcome.CANNOT_RUN, reason="no jax")
    assert healthy_answer([ok], cannot) is cannot  # xlatools' own failure stays cannot-run
    failing = ReproResult(outcome=ReproOutcome.REPRODUCED, reason="")
    assert healthy_answer([bad], failing) is failing and failing.exit_code == 1
    assert sorted(EXIT_CODES.values()) == [0, 1, 3, 5]  # one code per answer


def test_debug_passes_grep_ignores_case():
    from xlatools.debug.breaks import PassCatalog, passes_table
    from xlatools.debug.passmap import PassClass, PassMap

    classes = [
        PassClass(
            "xla::AlgebraicSimplifier",
            "algsimp",
            "xla::AlgebraicSimplifier",
            "_ZalgsimpRun",
            "xla::AlgebraicSimplifier::RunImpl",
            "xla::AlgebraicSimplifier",
        )
    ]
    catalog = PassCatalog([PassMap("/lib.so", "EM_X86_64", True, classes)])
    assert [r.pass_ for r in passes_table(catalog, "simplif")] == ["algsimp"]
    assert [r.pass_ for r in passes_table(catalog, "ALGSIMP")] == ["algsimp"] and passes_table(catalog, "dce") == []


def test_triage_dry_run_names_the_versions_and_says_skip_once():
    from xlatools.records.triage import StageRecord
    from xlatools.triage.stages import Action, decide, work
    from xlatools.vocab import TriageStage

    assert work(TriageStage.RELEASES, "0.6.0", "0.6.2").startswith("bisect releases --good 0.6.0 --bad 0.6.2 ")
    planned = decide(
        TriageStage.PASSES,
        StageRecord(stage=TriageStage.PASSES),
        frozenset({TriageStage.PASSES}),
        "",
        lambda s: True,
        lambda s: StageRecord(stage=s),
    )
    assert planned.action == Action.SKIP and f"{planned.action} ({planned.reason})" == "skip (--skip)"


def test_report_refuses_a_missing_folder_instead_of_making_it(tmp_path):
    from xlatools.fsutil import check_output

    with pytest.raises(UsageError, match="the folder .*nonexistent does not exist"):
        check_output(tmp_path / "nonexistent" / "x.html", "-o", parents=False)
    check_output(tmp_path / "nonexistent" / "x.html", "-o")  # the others still make it
    assert not (tmp_path / "nonexistent").exists()


def test_the_default_out_inside_a_bundle_is_the_folder_that_holds_it(tmp_path, monkeypatch):
    from xlatools.commands.options import _out_root

    run = _bundle(tmp_path / "artifacts", RunManifest(), "smoke")
    (run / "xla_dump").mkdir()
    monkeypatch.chdir(run / "xla_dump")
    assert _out_root(Path("artifacts")) == tmp_path / "artifacts"
    assert _out_root(Path("elsewhere")) == Path("elsewhere")  # an --out of one's own is kept
    monkeypatch.chdir(tmp_path)
    assert _out_root(Path("artifacts")) == Path("artifacts")


def test_the_manifest_lists_the_cpu_devices_the_smoke_programs_ran_on():
    from xlatools.records.run import Device, InterpreterFacts, SmokeReport, SmokeResult
    from xlatools.run.manifest import reconcile_devices

    jax = InterpreterFacts(
        jax="0.10.2", jaxlib="0.10.2", backend="cpu", devices=[Device(id=0, platform="cpu", kind="cpu")]
    )
    smoke = SmokeReport(
        jax="0.10.2", results=[SmokeResult(name=n, ok=True, backend="cpu", devices=4) for n in ("a", "b")]
    )
    reconcile_devices(jax, smoke)
    assert [d.id for d in jax.devices] == [0, 1, 2, 3] and {d.kind for d in jax.devices} == {"cpu"}
    gpu = InterpreterFacts(backend="gpu", devices=[Device(id=0, platform="gpu", kind="H100")])
    reconcile_devices(gpu, SmokeReport(results=[SmokeResult(name="a", ok=True, backend="gpu", devices=2)]))
    assert len(gpu.devices) == 1  # GPUs are what the probe saw; only a forced host count differs


def test_a_divergence_names_each_sides_files_once():
    from xlatools.compare.model import Divergence

    before = Divergence(
        -1, None, None, None, {"a_before": "m.txt", "a_after": "m.txt", "b_before": "n.txt", "b_after": "n.txt"}
    )
    assert before.file_lines() == [("A", "m.txt"), ("B", "n.txt")]
    assert before.label == "before optimisation (the input HLO differs)"
    after = Divergence(
        3, "pipe", "algsimp", "algsimp", {"a_before": "a2", "a_after": "a3", "b_before": "b2", "b_after": "b3"}
    )
    assert after.file_lines() == [("A", "a2 -> a3"), ("B", "b2 -> b3")]


def test_the_report_names_each_side_once():
    from xlatools.compare.model import SideInfo
    from xlatools.compare.text import describe_side

    side = SideInfo(label="A", path="artifacts/latest", dump_dir=None, kind="run", manifest=None)
    assert describe_side(side) == "A: artifacts/latest (run)" and describe_side(side, False) == "artifacts/latest (run)"


def test_the_readme_build_line_is_the_one_bazelrc_prints_for_dbg_cuda():
    import shlex

    from xlatools.builder.command import manual_buildpy_argv
    from xlatools.profiles import load

    line = shlex.join(manual_buildpy_argv(load("dbg-cuda").profile, "xlatools"))
    assert "--cudnn_version=" in line and "--nccl_version=" in line and "--cuda_compute_capabilities=sm_90" in line
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    shown = re.search(r"cd ~/jax && (python build/build\.py build .*?)\n```", readme, re.S)
    assert shown and " ".join(shown.group(1).replace("\\\n", " ").split()) == line
    assert manual_buildpy_argv(load("base").profile, "x")[-1] == "--bazel_options=--config=x"
