"""The replay bundle's record and the repro pack's index: what the last release wrote reads unchanged,
and a corrupt or foreign file is bad input (exit 2) naming the file and each key path."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from xlatools.errors import UsageError
from tests.helpers import as_one_interpreter_record
from xlatools.records import read_bundle, to_json
from xlatools.records.replay import Comparison, PackIndex, ReplayManifest, Timings
from xlatools.replay.pack import PackError, extract
from xlatools.replay.pack_index import read_index
from xlatools.vocab import Platform, ReplayOutcome, SourceForm, Status

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles-v1"
REPLAY = FIXTURES / "replay-seed"
PACK = FIXTURES / "pack-seed.tar.gz"


def kept(old, new, where: str = "") -> list[str]:
    """Where `new` does not keep a value of `old` (keys `new` adds must hold nothing yet)."""
    if isinstance(old, dict) and isinstance(new, dict):
        problems = [
            p
            for key in old
            for p in (kept(old[key], new[key], f"{where}.{key}") if key in new else [f"{where}.{key} missing"])
        ]
        return problems + [
            f"{where}.{key} added with {new[key]!r}" for key in set(new) - set(old) if new[key] not in (None, [], {})
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new)) for p in kept(a, b, f"{where}[{i}]")]
    return [] if old == new else [f"{where}: {old!r} became {new!r}"]


def test_the_last_releases_replay_manifest_reads_and_writes_back_the_same():
    record = read_bundle(REPLAY)
    assert isinstance(record, ReplayManifest)
    assert kept(as_one_interpreter_record(json.loads((REPLAY / "manifest.json").read_text())), to_json(record)) == []


def test_replay_fields_are_typed():
    record = read_bundle(REPLAY, kinds=("replay",))
    module = record.modules[0]
    run = module.runs[0]
    assert (record.status, module.outcome, run.failure) == (Status.OK, ReplayOutcome.OK, None)
    assert isinstance(run.run_s, Timings) and run.run_s.count == 1
    assert isinstance(run.comparisons[0], Comparison) and run.comparisons[0].against == "snapshot"
    assert run.comparisons[0].outputs[0].expected_shape == [2, 4, 5] and run.loaded_from.kind == "text"
    assert run.versions.jaxlib == "0.10.2" and run.versions.python_version == "3.11.7"  # the probe says `python`
    assert run.device.platform == "cpu" and module.outputs[0].dtype == "float32"
    assert record.plan.request.source_from == SourceForm.AUTO and record.plan.runs[0].platform == Platform.AUTO
    assert record.targets[run.python].devices[0].kind == "cpu" and record.flag_checks == {"test": {}}


@pytest.fixture
def pack_root(tmp_path) -> Path:
    return extract(PACK, tmp_path / "unpacked")  # the files of repro/, as `repro run` unpacks them


def test_the_last_releases_pack_index_reads_and_writes_back_the_same(pack_root):
    index = read_index(pack_root, PACK)
    assert isinstance(index, PackIndex) and index.modules[0].outcome == ReplayOutcome.OK
    assert index.replay.platform == Platform.AUTO and index.run.env_changes[0].value == "***redacted***"
    assert index.versions.jaxlib == "0.10.2" and index.modules[0].files["text"].endswith("before_optimizations.txt")
    assert index.versions.python_version == "3.11.7"  # written as `python` by the last release
    assert kept(as_one_interpreter_record(json.loads((pack_root / "pack.json").read_text())), to_json(index)) == []


def _replay_with(tmp_path: Path, change) -> Path:
    bundle = tmp_path / "replay"
    shutil.copytree(REPLAY, bundle)
    data = json.loads((bundle / "manifest.json").read_text())
    text = change(data)
    (bundle / "manifest.json").write_text(text if isinstance(text, str) else json.dumps(data))
    return bundle


def _wrong(data: dict) -> None:
    data["modules"][0]["outcome"] = "exploded"
    data["modules"][0]["runs"][0]["comparisons"][0]["ok"] = "maybe"
    data["plan"]["request"]["platform"] = "tpu"
    data["targets"]["/work/wt/issue-18/.venv/bin/python3"]["devices"][0]["id"] = "zero"


@pytest.mark.parametrize(
    "change,expected",
    [
        (lambda data: "{not json", "not valid JSON"),
        (lambda data: "[]", "JSON list, not an object"),
        (lambda data: "null", "JSON NoneType, not an object"),
        (lambda data: '{"kind": "replay"}', "not an xlatools bundle manifest"),
        (lambda data: data.update(schema_version=2), "schema version 2"),
    ],
)
def test_unreadable_or_foreign_replay_manifests_are_bad_input(tmp_path, change, expected):
    with pytest.raises(UsageError) as caught:
        read_bundle(_replay_with(tmp_path, change))
    assert expected in caught.value.message and caught.value.exit_code == 2
    assert str(tmp_path / "replay" / "manifest.json") in caught.value.message


def test_a_replay_manifest_of_the_wrong_shape_names_each_key_path(tmp_path):
    with pytest.raises(UsageError) as caught:
        read_bundle(_replay_with(tmp_path, _wrong))
    keys = {problem.key for problem in caught.value.problems}
    assert {
        "modules[0].outcome",
        "modules[0].runs[0].comparisons[0].ok",
        "plan.request.platform",
        "targets./work/wt/issue-18/.venv/bin/python3.devices[0].id",
    } <= keys
    assert "4 problems" in caught.value.message


def test_a_replay_bundle_where_a_run_is_expected_is_named(tmp_path):
    with pytest.raises(UsageError, match="a replay bundle; expected run"):
        read_bundle(REPLAY, kinds=("run",))


def test_a_replay_manifest_that_is_a_folder_or_a_fifo(tmp_path):
    folder = tmp_path / "folder"
    (folder / "manifest.json").mkdir(parents=True)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "manifest.json")  # reading a FIFO would hang
    for bundle in (folder, fifo):
        with pytest.raises(UsageError, match="not a regular file"):
            read_bundle(bundle, kinds=("replay",))


def _index_with(pack_root: Path, change) -> None:
    data = json.loads((pack_root / "pack.json").read_text())
    text = change(data)
    (pack_root / "pack.json").write_text(text if isinstance(text, str) else json.dumps(data))


@pytest.mark.parametrize(
    "change,expected",
    [
        (lambda data: "{not json", "not valid JSON"),
        (lambda data: "[1]", "JSON list, not an object"),
        (lambda data: "null", "JSON NoneType, not an object"),
        (lambda data: data.update(format="xlatools.repro/2"), "pack format 'xlatools.repro/2'"),
        (lambda data: '{"kind": "run", "schema_version": 1}', "pack format None"),
    ],
)
def test_unreadable_or_foreign_pack_indexes_are_bad_input(pack_root, change, expected):
    _index_with(pack_root, change)
    with pytest.raises(PackError) as caught:
        read_index(pack_root, PACK)
    assert expected in caught.value.message and caught.value.exit_code == 2
    assert (
        str(PACK) in caught.value.message and str(pack_root) not in caught.value.message
    )  # the pack, not a temp folder


def test_a_pack_index_of_the_wrong_shape_names_each_key_path(pack_root):
    def wrong(data):
        data["modules"][0]["id"] = "eight"
        data["modules"][0]["outputs"] = "digest"
        data["replay"]["seed"] = [0]
        data["run"]["env_changes"] = {"API_TOKEN": "x"}

    _index_with(pack_root, wrong)
    with pytest.raises(PackError) as caught:
        read_index(pack_root, PACK)
    assert {p.key for p in caught.value.problems} >= {
        "modules[0].id",
        "modules[0].outputs",
        "replay.seed",
        "run.env_changes",
    }
    assert all(p.file == f"pack.json in {PACK}" for p in caught.value.problems)
    assert caught.value.message.startswith(f"pack.json in {PACK}: the pack index does not have the expected shape")


def test_a_pack_index_that_is_a_folder_or_missing(pack_root):
    (pack_root / "pack.json").unlink()
    with pytest.raises(PackError, match="cannot read the pack index"):
        read_index(pack_root, PACK)
    (pack_root / "pack.json").mkdir()
    with pytest.raises(PackError, match="not a regular file"):
        read_index(pack_root, PACK)


def test_every_packed_option_is_a_replay_option():
    """A pack's options become the request that replays it, field by field (repro._request_of)."""
    from dataclasses import fields

    from xlatools.records.replay import PackedOptions, ReplayRequest

    requested = {f.name: f.type for f in fields(ReplayRequest)}
    assert all(requested.get(f.name) == f.type for f in fields(PackedOptions))


def test_the_targets_answer_reads_as_a_run_record_and_a_foreign_one_is_cannot_run(tmp_path):
    """result.json as the release's target script wrote it; one of another shape is no verdict on the module."""
    from xlatools.replay.jobs import read_answer
    from xlatools.replay.plan import RunConfig
    from xlatools.run.hlo_canon import fingerprint

    run = RunConfig(label="test", role="test", python="/py", platform=Platform.AUTO)
    shutil.copytree(REPLAY / "modules" / "0008-jit_fn" / "test", tmp_path / "test")
    record = read_answer(tmp_path / "test", run)
    assert record.failure is None and record.run_s.median == 0.006199 and record.comparisons[0].ok
    optimized = (tmp_path / "test" / "optimized.txt").read_text()
    assert record.fingerprint == fingerprint(
        optimized
    )  # of optimized.txt; the release's, before JSON keys were sorted:
    assert fingerprint(optimized, sorted_json=False) == read_bundle(REPLAY).modules[0].fingerprint
    (tmp_path / "test" / "result.json").write_text(json.dumps({"phase": "run", "failure": "melted", "run_s": 3}))
    odd = read_answer(tmp_path / "test", run)
    assert odd.failure == ReplayOutcome.CANNOT_RUN and "[failure]" in odd.message and "[run_s]" in odd.message
    (tmp_path / "test" / "result.json").unlink()
    assert read_answer(tmp_path / "test", run) is None  # no answer: the target died


def test_a_pack_index_records_what_it_left_out_its_references_and_numerics(pack_root):
    """Issue 19: packs carry the run's numerics variables, the modules left out (tool failures) and the
    reference interpreters; older packs have none of them, and wrong shapes are named."""
    from xlatools.replay.pack_index import pack_references

    index = read_index(pack_root, PACK)
    assert (index.left_out, index.reference_pythons, index.replay.env) == ([], [], {})

    def newer(data):
        data["replay"]["env"] = {"JAX_ENABLE_X64": "1"}
        data["left_out"] = [{"id": 3, "name": "jit_f", "why": "cannot-run (test, run): refused by design"}]
        data["reference_pythons"] = [{"python": "/nowhere/bin/python", "jaxlib": "0.12.0"}]

    _index_with(pack_root, newer)
    index = read_index(pack_root, PACK)
    assert index.replay.env == {"JAX_ENABLE_X64": "1"} and index.left_out[0].label == "0003 jit_f"
    assert pack_references(index, []) == (
        [],
        "the pack compares with 1 reference interpreter(s) (jaxlib 0.12.0, made "
        "with /nowhere/bin/python); --reference-python gave 0: give one "
        "interpreter with that jaxlib for each",
    )
    assert pack_references(index, ["/a", "/b"])[1].startswith("the pack compares with 1 reference interpreter(s)")
    assert pack_references(index, ["/here/python"]) == (["/here/python"], None)

    def wrong(data):
        data["left_out"] = [{"id": 3, "name": "jit_f", "why": ["x"]}]
        data["reference_pythons"] = [{"jaxlib": "0.12.0"}]
        data["replay"]["env"] = ["JAX_ENABLE_X64"]

    _index_with(pack_root, wrong)
    with pytest.raises(PackError) as caught:
        read_index(pack_root, PACK)
    assert {p.key for p in caught.value.problems} >= {"left_out[0].why", "reference_pythons[0].python", "replay.env"}


def test_a_packs_replay_is_named_once_after_it(pack_root):
    """`repro run repro.tar.gz` makes `...-replay-repro-...`, not `...-replay-repro-repro-...`."""
    from xlatools.replay.repro import _request_of

    index = read_index(pack_root, PACK)
    names = [_request_of(index, Path(f"/p/{pack}"), "/py", []).name for pack in ("repro.tar.gz", "conv.tar.gz")]
    assert names == ["repro", "repro-conv"]
