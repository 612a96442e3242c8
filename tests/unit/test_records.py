"""The typed records and their one reader: manifests the last release wrote read unchanged, and a
corrupt or foreign file is bad input (exit 2) naming the file and what is wrong."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from xlatools.errors import UsageError
from xlatools.records import read_bundle, to_json
from xlatools.records.run import OverrideRecord, RunManifest
from xlatools.vocab import Status

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles-v1"


@pytest.mark.parametrize("name", ["run-smoke-dot", "run-crash", "run-seed-full"])
def test_run_manifests_of_the_last_release_read_and_write_back_the_same(name):
    record = read_bundle(FIXTURES / name)
    assert isinstance(record, RunManifest) and isinstance(record.status, Status)
    written = to_json(record)
    old = json.loads((FIXTURES / name / "manifest.json").read_text())
    assert {key: written[key] for key in old} == old  # every value kept as it was
    assert all(written[key] is None for key in set(written) - set(old))  # new fields only add nothing-yet


def test_typed_fields_are_typed():
    record = read_bundle(FIXTURES / "run-crash")
    assert (record.status, record.signal, record.returncode) == (Status.FAILED, "SIGSEGV", -11)
    seed = read_bundle(FIXTURES / "run-seed-full")
    assert seed.dump.modules[1].source.line == 4 and seed.presets[0].kind == "dump"


def test_keyword_keys_round_trip():
    record = OverrideRecord(flag="--a=1", by="--a=2", from_="preset x", source="--xla-flag")
    assert to_json(record) == {"flag": "--a=1", "by": "--a=2", "from": "preset x", "source": "--xla-flag"}


def _bundle_with(tmp_path: Path, text: str | bytes) -> Path:
    bundle = tmp_path / "b"
    bundle.mkdir()
    data = text.encode() if isinstance(text, str) else text
    (bundle / "manifest.json").write_bytes(data)
    return bundle


def _base() -> dict:
    return json.loads((FIXTURES / "run-crash" / "manifest.json").read_text())


@pytest.mark.parametrize(
    "content,expected",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON list, not an object"),
        ("null", "JSON NoneType, not an object"),
        (b"\xff\xfe{}", "not UTF-8"),
        ('{"hello": 1}', "not an xlatools bundle manifest"),
        ('{"kind": "run", "schema_version": 99}', "schema version 99"),
        ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ],
)
def test_unreadable_or_foreign_manifests_are_bad_input(tmp_path, content, expected):
    with pytest.raises(UsageError) as caught:
        read_bundle(_bundle_with(tmp_path, content))
    assert expected in caught.value.message and caught.value.exit_code == 2
    assert str(tmp_path / "b" / "manifest.json") in caught.value.message


def test_wrong_shapes_name_each_key_path(tmp_path):
    data = _base()
    data["status"] = "exploded"
    data["jax"]["devices"] = [{"id": "zero"}]
    data["program"] = []
    with pytest.raises(UsageError) as caught:
        read_bundle(_bundle_with(tmp_path, json.dumps(data)))
    keys = {problem.key for problem in caught.value.problems}
    assert {"status", "jax.devices[0].id", "program"} <= keys
    assert "3 problems" in caught.value.message


def test_a_kind_the_caller_does_not_take_is_named(tmp_path):
    with pytest.raises(UsageError, match="a run bundle; expected replay"):
        read_bundle(FIXTURES / "run-crash", kinds=("replay",))


def test_not_a_regular_file(tmp_path):
    bundle = tmp_path / "b"
    (bundle / "manifest.json").mkdir(parents=True)
    with pytest.raises(UsageError, match="not a regular file"):
        read_bundle(bundle)
    fifo_bundle = tmp_path / "f"
    fifo_bundle.mkdir()
    os.mkfifo(fifo_bundle / "manifest.json")  # reading a FIFO would hang
    with pytest.raises(UsageError, match="not a regular file"):
        read_bundle(fifo_bundle)
    with pytest.raises(UsageError, match="cannot read the manifest"):
        read_bundle(tmp_path / "missing")


def test_newer_unknown_keys_are_ignored(tmp_path):
    data = _base()
    data["from_the_future"] = {"x": 1}
    record = read_bundle(_bundle_with(tmp_path, json.dumps(data)))
    assert record.status == Status.FAILED


def test_latest_link_and_manifest_path_both_read(tmp_path):
    shutil.copytree(FIXTURES / "run-crash", tmp_path / "run")
    os.symlink("run", tmp_path / "latest")
    assert read_bundle(tmp_path / "latest").id == read_bundle(tmp_path / "run" / "manifest.json").id


def test_numerics_env_is_typed_and_older_runs_fall_back_to_their_env_changes(tmp_path):
    """Issue 19: a run records the variables that change numbers; replays and packs restore them."""
    from xlatools.replay.settings import of_bundle

    old = read_bundle(FIXTURES / "run-seed-full")
    assert old.numerics_env is None and "numerics_env" not in to_json(old)  # older runs: absent, and kept so
    data = _base()
    data["numerics_env"] = {"JAX_ENABLE_X64": "1"}
    data["xla_flags"] = ["--xla_dump_to=/x", "--xla_cpu_enable_fast_math=false"]
    bundle = _bundle_with(tmp_path, json.dumps(data))
    settings = of_bundle(bundle)
    assert settings.env == {"JAX_ENABLE_X64": "1"} and settings.xla_flags == ["--xla_cpu_enable_fast_math=false"]
    data.pop("numerics_env")
    data["env_changes"] = [
        {"name": "JAX_ENABLE_X64", "value": "1"},
        {"name": "XLA_FLAGS", "value": "--x"},
        {"name": "JAX_DEFAULT_MATMUL_PRECISION", "value": None},
    ]
    (bundle / "manifest.json").write_text(json.dumps(data))
    assert of_bundle(bundle).env == {"JAX_ENABLE_X64": "1"}  # what xlatools itself set, numerics only
    data["numerics_env"] = ["JAX_ENABLE_X64"]
    (bundle / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(UsageError) as caught:
        of_bundle(bundle)
    assert "numerics_env" in {problem.key for problem in caught.value.problems} and caught.value.exit_code == 2
