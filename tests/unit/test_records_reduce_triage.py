"""The reduce bundle's record, reduce's state file, replay --isolate's part of the replay record and triage's state
file: real files of a real triage (tests/fixtures/reduce-triage, jaxlib 0.6.2 against 0.6.1; the state file's verdict
cache cut to 4 entries, the manifests' file index to 6) read and write back unchanged, and a corrupt or foreign file
is bad input (exit 2) naming the file and each key path."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import as_one_interpreter_record
from xlatools.errors import UsageError
from xlatools.records import read_bundle, to_json
from xlatools.records.reduce import ReduceManifest, ReduceState
from xlatools.records.replay import ReplayManifest
from xlatools.records.triage import TriageState
from xlatools.vocab import Interest, IsolationOutcome, OracleKind, StageStatus, Status, TriageStage

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "reduce-triage"


def _bundle(tmp_path: Path, fixture: str, change=None) -> Path:
    folder = tmp_path / fixture.removesuffix(".json")
    folder.mkdir()
    data = json.loads((FIXTURES / fixture).read_text())
    text = change(data) if change else None
    (folder / "manifest.json").write_text(text if isinstance(text, str) else json.dumps(data))
    return folder


def test_a_reduce_manifest_reads_typed_and_writes_back_the_same(tmp_path):
    record = read_bundle(_bundle(tmp_path, "reduce-manifest.json"), kinds=("reduce",))
    assert isinstance(record, ReduceManifest) and record.status == Status.OK
    assert record.plan.oracle.kind == OracleKind.MISMATCH and record.plan.reference.label == "reference-python-1"
    result = record.result
    assert result.instructions_before == 121 and result.instructions_after == 5 and not result.flaky
    assert [v.interest for v in result.rechecks] == [Interest.INTERESTING] * 3
    assert result.rechecks[0].comparison.nan_mismatches == 8 and record.test.versions.jaxlib == "0.6.2"
    assert record.rounds[0].phase == "inline" and record.reference.versions.jaxlib == "0.6.1"
    expected = as_one_interpreter_record(json.loads((FIXTURES / "reduce-manifest.json").read_text()))
    assert record.test.versions.python_version == "3.11.7" and to_json(record) == expected


def test_replay_isolate_is_part_of_the_replay_record(tmp_path):
    record = read_bundle(_bundle(tmp_path, "replay-isolate-manifest.json"), kinds=("replay",))
    assert isinstance(record, ReplayManifest)
    context = record.isolation.first_mismatch_in_context
    assert record.isolation.first_mismatch is None and context.opcode == "exponential"
    assert context.outcome == IsolationOutcome.MISMATCH and record.isolation.file.endswith("isolate.json")
    assert to_json(record) == as_one_interpreter_record(
        json.loads((FIXTURES / "replay-isolate-manifest.json").read_text())
    )


def _wrong_reduce(data: dict) -> None:
    data["result"]["rechecks"][0]["interest"] = "fascinating"
    data["rounds"][0]["oracle_calls"] = "many"


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda data: "{not json", "not valid JSON"),
        (lambda data: "[]", "a JSON list, not an object"),
        (lambda data: "null", "a JSON NoneType, not an object"),
        (lambda data: json.dumps({**data, "kind": "potato"}), "not an xlatools bundle manifest"),
    ],
)
def test_damaged_or_foreign_reduce_manifests_are_bad_input(tmp_path, change, expected):
    with pytest.raises(UsageError, match=expected):
        read_bundle(_bundle(tmp_path, "reduce-manifest.json", change), kinds=("reduce",))


def test_wrong_shapes_in_a_reduce_manifest_name_each_key(tmp_path):
    with pytest.raises(UsageError) as raised:
        read_bundle(_bundle(tmp_path, "reduce-manifest.json", _wrong_reduce))
    keys = {problem.key for problem in raised.value.problems}
    assert {"result.rechecks[0].interest", "rounds[0].oracle_calls"} <= keys
    assert all(problem.file.endswith("manifest.json") for problem in raised.value.problems)


def _state_folder(tmp_path: Path, change=None) -> Path:
    """A reduce state folder as StateStore.open finds it for the fixture's key."""
    data = json.loads((FIXTURES / "reduce-state.json").read_text())
    folder = tmp_path / "out" / ".reduce-state" / f"reduce-m-{data['key']}"
    folder.mkdir(parents=True)
    text = change(data) if change else None
    (folder / "state.json").write_text(text if isinstance(text, str) else json.dumps(data))
    return folder


@pytest.fixture
def reopen(tmp_path, monkeypatch):
    """StateStore.open for the fixture's reduction (its key names the folder)."""
    from xlatools.reduce import state

    key = json.loads((FIXTURES / "reduce-state.json").read_text())["key"]
    monkeypatch.setattr(state, "state_key", lambda identity: key)
    return lambda: state.StateStore.open(tmp_path / "out", "reduce-m", {}, fresh=False)


def test_a_reduce_state_file_resumes_typed(tmp_path, reopen):
    _state_folder(tmp_path)
    store = reopen()
    assert store.resumed and isinstance(store.state, ReduceState)
    assert store.state.best.verdict.interest == Interest.INTERESTING and "exponential" in store.state.best.text
    assert all(v.path.endswith("outputs.npz") for v in store.state.values.values())
    assert to_json(store.state) == json.loads((FIXTURES / "reduce-state.json").read_text())


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda data: "{", "not valid JSON"),
        (lambda data: json.dumps({**data, "counters": {"oracle_calls": "lots"}}), "expected shape"),
        (lambda data: json.dumps({**data, "schema": "somebody-else/9"}), "another reduction"),
    ],
)
def test_a_damaged_reduce_state_file_is_bad_input_naming_it(tmp_path, reopen, change, expected):
    folder = _state_folder(tmp_path, change)
    with pytest.raises(UsageError, match=expected) as raised:
        reopen()
    assert str(folder / "state.json") in raised.value.message and "--fresh" in raised.value.hint


def test_a_reduce_state_that_is_a_folder_or_a_fifo_is_bad_input(tmp_path, reopen):
    folder = _state_folder(tmp_path)
    (folder / "state.json").unlink()
    os.mkfifo(folder / "state.json")
    with pytest.raises(UsageError, match="not a regular file"):
        reopen()
    (folder / "state.json").unlink()
    (folder / "state.json").mkdir()
    with pytest.raises(UsageError, match="not a regular file"):
        reopen()


def _triage_folder(tmp_path: Path, change=None) -> Path:
    folder = tmp_path / "triage"
    folder.mkdir()
    data = json.loads((FIXTURES / "triage.json").read_text())
    text = change(data) if change else None
    (folder / "triage.json").write_text(text if isinstance(text, str) else json.dumps(data))
    return folder


def test_a_triage_state_reads_typed_and_writes_back_the_same(tmp_path):
    from xlatools.triage.plan import load

    state = load(_triage_folder(tmp_path))
    assert isinstance(state, TriageState) and [r.stage for r in state.stages] == list(TriageStage)
    assert state.stages[0].status == StageStatus.DONE and state.passes.culprits == ["constant_folding"]
    assert (state.releases.last_good, state.releases.first_bad) == ("0.6.1", "0.6.2")
    assert state.isolate.first_mismatch_in_context.opcode == "exponential" and state.spec.test.program.endswith(
        "check.py"
    )
    written = to_json(state)
    written["folder"] = json.loads((FIXTURES / "triage.json").read_text())["folder"]  # where it was read from
    assert written == json.loads((FIXTURES / "triage.json").read_text())


def test_a_damaged_triage_state_names_the_file_and_keys(tmp_path):
    from xlatools.triage.plan import load

    def wrong(data: dict) -> None:
        data["stages"][2]["status"] = "meh"
        data["reduce"]["instructions_after"] = "few"

    folder = _triage_folder(tmp_path, wrong)
    with pytest.raises(UsageError) as raised:
        load(folder)
    assert {"stages[2].status", "reduce.instructions_after"} <= {p.key for p in raised.value.problems}
    assert str(folder / "triage.json") in raised.value.message
    shutil.rmtree(folder)
    with pytest.raises(UsageError, match="schema"):
        load(_triage_folder(tmp_path, lambda data: json.dumps({**data, "schema": "xlatools.triage/9"})))
