"""The typed fields issue 22 adds to the build manifest (the plan's credential sources, bazel's process
counts) and to the bisect state (each built step's counts): they read back as records through the one
reader, a manifest from before them reads unchanged, and a wrong shape names its key path (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from xlatools.bisect.state import STATE_FILE, load
from xlatools.errors import UsageError
from xlatools.records import read_bundle, to_json
from xlatools.records.build import BazelProcesses, CredentialRefs, SecretRef
from xlatools.remote.stats import parse_process_counts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles-v1"
COUNTS = parse_process_counts(["INFO: 5 processes: 3 remote cache hit, 1 internal, 1 linux-sandbox."])
REFS = CredentialRefs(basic_auth=SecretRef(env="TEAM_AUTH"), headers=(("X-Token", SecretRef(file="/k/token")),))


def _bundle(tmp_path: Path, change) -> Path:
    data = json.loads((FIXTURES / "build-ok" / "manifest.json").read_text())
    change(data)
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps(data))
    return bundle


def _with_remote(data: dict) -> None:
    data["bazel_processes"] = to_json(COUNTS)
    data["plan"].update(
        remote_cache="http://127.0.0.1:1/c",
        remote_executor="grpc://127.0.0.1:2",
        credentials=to_json(REFS),
        private_rc="/tmp/xlatools-1/ab/remote.bazelrc",
        private_rc_seen="/tmp/xlatools-1/ab/remote.bazelrc",
    )


def test_counts_and_credential_sources_read_back_as_records(tmp_path):
    record = read_bundle(_bundle(tmp_path, _with_remote), kinds=("build",))
    assert (
        record.bazel_processes
        == COUNTS
        == BazelProcesses(
            total=5,
            by_kind={"remote cache hit": 3, "internal": 1, "linux-sandbox": 1},
            cache_hits=3,
            actions=4,
            hit_share=0.75,
        )
    )
    assert record.plan.credentials == REFS and record.plan.remote_executor == "grpc://127.0.0.1:2"
    assert REFS.describe() == ["basic auth from $TEAM_AUTH", "header X-Token from file /k/token"]


def test_a_manifest_from_before_has_no_counts_and_writes_no_remote_keys():
    record = read_bundle(FIXTURES / "build-ok")
    assert record.bazel_processes is None and record.plan.credentials is None
    plan = to_json(record.plan)
    assert not {"remote_executor", "credentials", "private_rc", "private_rc_seen"} & set(plan)


def test_wrong_shapes_name_their_key_paths(tmp_path):
    def damage(data):
        _with_remote(data)
        data["bazel_processes"]["cache_hits"] = "many"
        data["bazel_processes"]["by_kind"]["internal"] = "one"
        data["plan"]["credentials"]["headers"][0][1] = {"env": 5}

    with pytest.raises(UsageError) as caught:
        read_bundle(_bundle(tmp_path, damage))
    keys = {problem.key for problem in caught.value.problems}
    assert {
        "bazel_processes.cache_hits",
        "bazel_processes.by_kind.internal",
        "plan.credentials.headers[0][1].env",
    } <= keys, keys
    assert caught.value.exit_code == 2 and str(tmp_path / "b" / "manifest.json") in caught.value.message


def _state(tmp_path: Path, counts) -> Path:
    data = json.loads((FIXTURES / "bisect-passes" / STATE_FILE).read_text())
    data["steps"][1]["bazel_processes"] = counts
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / STATE_FILE).write_text(json.dumps(data))
    return folder


def test_a_built_step_keeps_its_counts_and_other_steps_write_none(tmp_path):
    state = load(_state(tmp_path, to_json(COUNTS)))
    assert state.steps[1].bazel_processes == COUNTS and state.steps[0].bazel_processes is None
    written = to_json(state)
    assert written["steps"][1]["bazel_processes"]["hit_share"] == 0.75
    assert "bazel_processes" not in written["steps"][0]  # steps of releases and passes stay as they were
    shutil.rmtree(tmp_path / "s")
    with pytest.raises(UsageError) as caught:
        load(_state(tmp_path, {"total": 1, "by_kind": {}, "cache_hits": 0, "actions": "all", "hit_share": None}))
    assert "steps[1].bazel_processes.actions" in {problem.key for problem in caught.value.problems}
