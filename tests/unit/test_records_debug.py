"""The debug bundle's record and its reader: a manifest a real session wrote (gdb 13 stopping in
algsimp of jaxlib 0.10.2, tests/fixtures/debug-session) reads typed and writes back the same; a
corrupt or foreign one is bad input (exit 2) naming the file and each key path; gdb's answer
(session.json) reads through the same reader."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from xlatools.errors import UsageError
from xlatools.records import read_bundle, to_json
from xlatools.records.debug import Breakpoint, DebugManifest
from xlatools.vocab import Status

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "debug-session"


def _copy(tmp_path: Path, damage=None) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURE, bundle)
    if damage is not None:
        data = json.loads((bundle / "manifest.json").read_text())
        text = damage(data)
        (bundle / "manifest.json").write_text(text if isinstance(text, str) else json.dumps(data))
    return bundle


def test_a_real_sessions_manifest_reads_typed_and_writes_back_the_same():
    record = read_bundle(FIXTURE, kinds=("debug",))
    assert isinstance(record, DebugManifest) and record.status == Status.OK and record.exit_code == 0
    stop = record.stops[0]
    assert (stop.pass_, stop.class_, stop.module_file) == (
        "algsimp",
        "xla::AlgebraicSimplifier",
        "stops/1/module-before.txt",
    )
    assert stop.function.startswith("xla::AlgebraicSimplifier::RunImpl(")
    assert (FIXTURE / stop.backtrace).is_file() and (FIXTURE / stop.python_stack).is_file()
    assert isinstance(record.breakpoints[0], Breakpoint) and record.breakpoints[0].pass_ == "algsimp"
    assert (record.jax.jaxlib, record.frontend.name, record.gdb.version) == (
        "0.10.2",
        "jax",
        "GNU gdb (Debian 13.1-3) 13.1",
    )
    assert to_json(record) == json.loads((FIXTURE / "manifest.json").read_text())


def test_a_debug_bundle_reads_where_runs_are_read_and_nowhere_else():
    from xlatools.records.run import RUN_KINDS

    assert isinstance(read_bundle(FIXTURE, kinds=RUN_KINDS), DebugManifest)  # inspect: a run under gdb
    with pytest.raises(UsageError, match="a debug bundle; expected replay"):
        read_bundle(FIXTURE, kinds=("replay",))


@pytest.mark.parametrize(
    "content, expected",
    [
        ("{not json", "not valid JSON"),
        ("[1]", "JSON list, not an object"),
        ("null", "JSON NoneType, not an object"),
        ('{"kind": "debugger", "schema_version": 1}', "not an xlatools bundle manifest"),
    ],
)
def test_unreadable_or_foreign_debug_manifests_are_bad_input(tmp_path, content, expected):
    bundle = _copy(tmp_path, lambda data: content)
    with pytest.raises(UsageError) as caught:
        read_bundle(bundle)
    assert expected in caught.value.message and str(bundle / "manifest.json") in caught.value.message
    assert caught.value.exit_code == 2


def _bad_debug(data: dict) -> None:
    data["stops"][0]["number"] = "first"
    data["breakpoints"][0]["classes"] = "xla::RngExpander"
    data["gdb"] = ["gdb"]


def test_a_debug_manifest_of_the_wrong_shape_names_each_key_path(tmp_path):
    with pytest.raises(UsageError) as caught:
        read_bundle(_copy(tmp_path, _bad_debug))
    keys = {problem.key for problem in caught.value.problems}
    assert {"stops[0].number", "breakpoints[0].classes", "gdb"} <= keys


def test_a_debug_manifest_that_is_a_folder_or_a_fifo(tmp_path):
    bundle = _copy(tmp_path)
    (bundle / "manifest.json").unlink()
    (bundle / "manifest.json").mkdir()
    with pytest.raises(UsageError, match="not a regular file"):
        read_bundle(bundle)
    (bundle / "manifest.json").rmdir()
    os.mkfifo(bundle / "manifest.json")
    with pytest.raises(UsageError, match="not a regular file"):
        read_bundle(bundle)


def test_inspect_and_diff_refuse_a_damaged_debug_manifest(tmp_path):
    bundle = _copy(tmp_path, _bad_debug)
    manifest = str(bundle / "manifest.json")
    for argv in (["inspect", str(bundle)], ["diff", str(FIXTURE), str(bundle), "--json"]):
        result = run_cli(*argv)
        assert result.returncode == 2 and manifest in result.stderr and "Traceback" not in result.stderr, argv
        assert "[stops[0].number]" in result.stderr and "[gdb]" in result.stderr


def test_gdbs_answer_reads_typed_and_a_damaged_one_is_an_error_of_the_session(tmp_path):
    from xlatools.debug.session import RESULT, _read_result

    shutil.copy(FIXTURE / "session.json", tmp_path / RESULT)
    result = _read_result(tmp_path, Status.OK)
    assert result.status == Status.OK and result.answer.stops[0].class_ == "xla::AlgebraicSimplifier"
    (tmp_path / RESULT).write_text('{"stops": [{"number": 1}]}')
    (tmp_path / "gdb.log").write_text("Python Exception <class 'KeyError'>: 'x'\n")
    result = _read_result(tmp_path, "gdb exit 1")
    assert result.status == Status.ERROR and "does not have the expected shape" in result.error
    assert "gdb exit 1" in result.error and "KeyError" in result.error
