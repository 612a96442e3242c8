"""The build manifest and the bisect state file: what the last release wrote reads unchanged (and a
bisection it started is found again), and a damaged or foreign file is bad input (exit 2) naming
the file and each key path that is wrong."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from xlatools.bisect.state import STATE_FILE, load, spec_hash
from xlatools.errors import UsageError
from xlatools.records import read_bundle, to_json
from xlatools.records.bisect import PassSpec, ProgramTestSpec
from xlatools.records.build import BuildManifest, BuildPlan
from xlatools.vocab import BisectStatus, Status, StepOutcome

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles-v1"


def contained(old, new) -> bool:
    """Every key and value of `old` is in `new` (which may add keys, nested ones too)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(key in new and contained(value, new[key]) for key, value in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(map(contained, old, new))
    return old == new


def test_the_build_manifest_of_the_last_release_reads_and_writes_back_the_same():
    record = read_bundle(FIXTURES / "build-ok")
    assert isinstance(record, BuildManifest) and isinstance(record.plan, BuildPlan)
    assert (record.status, record.returncode, record.plan.mode, record.wheels[0].size) == (Status.OK, 0, "local", 2)
    written = to_json(record)
    old = json.loads((FIXTURES / "build-ok" / "manifest.json").read_text())
    assert {key: written[key] for key in old} == old  # every value kept as it was, nested ones included
    assert not any(written[key] for key in set(written) - set(old))  # new fields only add nothing-yet
    assert "image" not in written and "kept_container" not in written  # only ever written when set


def _build_bundle(tmp_path: Path, change) -> Path:
    data = json.loads((FIXTURES / "build-ok" / "manifest.json").read_text())
    change(data)
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps(data) if not isinstance(data, str) else data)
    return bundle


def test_a_build_manifest_of_the_wrong_shape_names_each_key_path(tmp_path):
    def damage(data):
        data["plan"]["mounts"] = [{"source": "/x", "target": "/y", "read_only": "sometimes", "purpose": "p"}]
        data["wheels"][0]["size"] = "big"
        data["durations"]["total_s"] = "slow"
        del data["plan"]

    with pytest.raises(UsageError) as caught:
        read_bundle(_build_bundle(tmp_path, damage))
    assert {problem.key for problem in caught.value.problems} == {"plan", "wheels[0].size", "durations.total_s"}
    assert caught.value.exit_code == 2 and str(tmp_path / "b" / "manifest.json") in caught.value.message


@pytest.mark.parametrize(
    "content,expected",
    [
        ("{not json", "not valid JSON"),
        ("[]", "JSON list, not an object"),
        ("null", "JSON NoneType, not an object"),
        ('{"kind": "build", "schema_version": 2}', "schema version 2"),
    ],
)
def test_unreadable_build_manifests_are_bad_input(tmp_path, content, expected):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(content)
    with pytest.raises(UsageError, match=expected):
        read_bundle(bundle, kinds=("build",))


def test_a_build_bundle_is_not_taken_for_another_kind_nor_another_for_it(tmp_path):
    with pytest.raises(UsageError, match="a build bundle; expected run"):
        read_bundle(FIXTURES / "build-ok", kinds=("run",))
    with pytest.raises(UsageError, match="a run bundle; expected build"):
        read_bundle(FIXTURES / "run-crash", kinds=("build",))
    (tmp_path / "dir" / "manifest.json").mkdir(parents=True)
    with pytest.raises(UsageError, match="not a regular file"):
        read_bundle(tmp_path / "dir", kinds=("build",))


def _state_folder(tmp_path: Path, text: str | None = None) -> Path:
    folder = tmp_path / "passes-seed-4a43829404"
    folder.mkdir()
    if text is None:
        shutil.copy(FIXTURES / "bisect-passes" / STATE_FILE, folder / STATE_FILE)
    else:
        (folder / STATE_FILE).write_text(text)
    return folder


def test_the_bisect_state_of_the_last_release_reads_and_is_found_again(tmp_path):
    state = load(_state_folder(tmp_path))
    assert state.folder == tmp_path / "passes-seed-4a43829404" and state.status == BisectStatus.DONE
    assert isinstance(state.spec, PassSpec) and isinstance(state.spec.test, ProgramTestSpec)
    assert state.spec.test.rule.match == "calls=%fused_computation" and state.spec.test.rule.skip_exit == (125,)
    assert state.steps[0].outcome == StepOutcome.BAD and state.steps[0].detail.jaxlib == "0.10.2"
    assert [p.name for p in state.result.passes] == ["dot-library-rewriter", "fusion"]
    assert state.result.hlo[1].pass_ == "fusion" and state.result.diff.available
    assert state.result.confirm.first_bad == [StepOutcome.BAD]
    # The folder name holds the spec's hash: the same command finds the old bisection again.
    assert spec_hash(state.spec) == "4a43829404" == state.spec_hash
    old = json.loads((FIXTURES / "bisect-passes" / STATE_FILE).read_text())
    assert contained(old, to_json(state))


@pytest.mark.parametrize(
    "content,expected",
    [
        ("{not json", "cannot be read: the bisect state file is not valid JSON"),
        ("[1]", "cannot be read: the bisect state file is a JSON list"),
        ('{"schema": "xlatools.run/1", "kind": "run"}', "is corrupt (schema 'xlatools.run/1'"),
    ],
)
def test_an_unreadable_or_foreign_state_file_is_bad_input(tmp_path, content, expected):
    with pytest.raises(UsageError) as caught:
        load(_state_folder(tmp_path, content))
    assert expected in caught.value.message and str(tmp_path) in caught.value.message
    assert caught.value.exit_code == 2 and "--fresh" in caught.value.hint


def test_a_state_file_of_the_wrong_shape_names_each_key_path(tmp_path):
    data = json.loads((FIXTURES / "bisect-passes" / STATE_FILE).read_text())
    data["steps"][2]["outcome"] = "maybe"
    data["candidates"][0] = {"key": "fusion"}
    data["result"]["confirm"]["last_good"] = "good"
    with pytest.raises(UsageError, match="is corrupt") as caught:
        load(_state_folder(tmp_path, json.dumps(data)))
    keys = {problem.key for problem in caught.value.problems}
    assert {"steps[2].outcome", "candidates[0].label", "result.confirm.last_good"} <= keys


def test_a_folder_or_fifo_where_the_state_file_belongs(tmp_path):
    folder = tmp_path / "f"
    (folder / STATE_FILE).mkdir(parents=True)
    with pytest.raises(UsageError, match="cannot be read: the bisect state file is not a regular file"):
        load(folder)
    fifo = tmp_path / "p"
    fifo.mkdir()
    os.mkfifo(fifo / STATE_FILE)  # reading a FIFO would hang
    with pytest.raises(UsageError, match="not a regular file"):
        load(fifo)
    assert load(tmp_path / "nothing-here") is None
