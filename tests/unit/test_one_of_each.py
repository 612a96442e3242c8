"""The one helper of each kind: log tails, signal names, git (missing, timed out: its whole tree stopped)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.fsutil import tail_bytes, tail_lines
from xlatools.gitcmd import run_git
from xlatools.proctree import alive, signal_name


def test_tail_lines_reads_only_the_end(tmp_path):
    log = tmp_path / "big.log"
    log.write_text("".join(f"line {i}\n" for i in range(200_000)))  # ~2.3 MB
    assert tail_lines(log, 3) == ["line 199997", "line 199998", "line 199999"]
    assert len(tail_bytes(log, 1000)) == 1000
    assert tail_lines(tmp_path / "missing.log", 5) == [] and tail_bytes(tmp_path / "missing.log") == b""
    assert tail_lines(log, 0) == []


def test_signal_name_spells_every_death_one_way():
    assert signal_name(-11) == "SIGSEGV" and signal_name(-6) == "SIGABRT"
    assert signal_name(0) is None and signal_name(3) is None and signal_name(None) is None
    assert signal_name(-99) == "signal 99"  # no such signal here: the number, not a crash of ours


def test_git_missing_is_one_environment_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    with pytest.raises(EnvironmentMissing) as caught:
        run_git("rev-parse", "HEAD", repo=tmp_path, needed_for="a test")
    assert caught.value.exit_code == 3 and "git is not installed (a test)" in caught.value.message


def test_a_git_past_its_timeout_is_stopped_with_its_children(tmp_path, monkeypatch):
    fake = tmp_path / "git"
    pids = tmp_path / "pids"
    # a git that starts a helper (as ssh or a credential helper would) and hangs
    fake.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pids}\nsleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("XLATOOLS_GIT_TIMEOUT", "0.5")
    with pytest.raises(EnvironmentMissing) as caught:
        run_git("ls-remote", "somewhere")
    assert "did not finish in 0.5 s" in caught.value.message and "XLATOOLS_GIT_TIMEOUT" in (caught.value.hint or "")
    helper = int(Path(pids).read_text())
    for _ in range(50):  # SIGKILL is delivered at once; reaping by init can lag a little
        if not alive(helper):
            break
        time.sleep(0.05)
    assert not alive(helper)


def test_a_bad_git_timeout_setting_is_bad_input(monkeypatch):
    monkeypatch.setenv("XLATOOLS_GIT_TIMEOUT", "soon")
    with pytest.raises(UsageError, match="XLATOOLS_GIT_TIMEOUT='soon'"):
        run_git("--version")


def test_the_shipped_presets_have_the_shape_user_presets_are_checked_against():
    """Runs trust the shipped presets (no pydantic on a run's path); this is where they are checked."""
    from xlatools.run.presets.catalog import shape_problems, shipped_definitions

    definitions = shipped_definitions()
    assert len(definitions) >= 4  # dump, frontends, jax, log
    for path, data in definitions:
        for name, spec in data.items():
            assert shape_problems(name, spec, str(path)) == [], (path, name)


def test_a_user_preset_of_the_wrong_type_is_named_by_its_key_path():
    from xlatools.run.presets.catalog import parse_preset

    preset, problems = parse_preset("mine", {"kind": "log", "vmodule": {"gpu_compiler": "2"}}, "my.yaml")
    assert preset is None and [p.key for p in problems] == ["mine.vmodule.gpu_compiler"], problems


def test_a_lock_file_of_the_wrong_shape_is_refused_with_key_paths(tmp_path):
    from xlatools.errors import PinError
    from xlatools.pin.lock import load_lock

    lock = tmp_path / "xlatools.lock"
    entry = {"kind": "archive", "commit": "a" * 40, "sha256": "b" * 64, "urls": "https://example.invalid/x.tar.gz"}
    lock.write_text(json.dumps({"lock_version": 2, "dependencies": {"xla": entry}}))
    with pytest.raises(PinError, match="does not have the expected shape") as caught:
        load_lock(lock)  # a string where a list goes: once read character by character
    assert [p.key for p in caught.value.problems] == ["dependencies.xla.urls"] and caught.value.exit_code == 2
