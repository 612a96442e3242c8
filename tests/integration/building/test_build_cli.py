"""`xlatools build` command-line behaviour that needs no engine: dry runs,
bad input (exit 2), a missing Docker engine (exit 3), never a traceback."""

from __future__ import annotations

import json

from tests.integration.building.build_helpers import PROFILES, run_build

FIXTURE_CPU = str(PROFILES / "fixture-cpu.yaml")
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def test_dry_run_json_is_the_plan_and_writes_nothing(tree, tmp_path):
    result = run_build(tree, "dbg-cuda", tmp_path / "cache", "--dry-run", "--json", env=NO_ENGINE)
    assert result.proc.returncode == 0, result.proc.stderr
    plan = json.loads(result.proc.stdout)
    assert {"image", "mounts", "env", "workdir", "argv", "user"} <= set(plan)
    assert plan["argv"][:4] == ["python3", "build/build.py", "build", "--wheels=jaxlib,jax-cuda-plugin,jax-cuda-pjrt"]
    assert plan["image"]["ref"].startswith("xlatools-build-cuda:")
    assert plan["tree"]["bazelrc"] == "added"
    assert not (tree / ".bazelrc.user").exists()
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()


def test_dry_run_text_shows_command_mounts_and_config(tree, tmp_path):
    result = run_build(tree, "dbg-cpu", tmp_path / "cache", "--dry-run", "--jobs", "3", env=NO_ENGINE)
    assert result.proc.returncode == 0, result.proc.stderr
    text = result.proc.stdout
    assert "command   python3 build/build.py build --wheels=jaxlib" in text
    assert "--bazel_options=--jobs=3" in text
    assert f"mount     {tree} -> /xlatools/src (rw; source tree)" in text
    assert "build:xlatools --compilation_mode=dbg" in text


def test_missing_engine_exits_3_with_how_to_start_it(tree, tmp_path):
    result = run_build(tree, FIXTURE_CPU, tmp_path / "cache", env=NO_ENGINE)
    assert result.proc.returncode == 3
    assert "no Docker engine answers at unix:///nonexistent/docker.sock" in result.proc.stderr
    assert "dockerd" in result.proc.stderr and "--local" in result.proc.stderr
    assert "Traceback" not in result.proc.stderr
    assert not (tree / ".bazelrc.user").exists() and not (tmp_path / "out").exists()


def test_source_without_build_py_is_bad_input(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_build(empty, "dbg-cpu", tmp_path / "cache", "--dry-run")
    assert result.proc.returncode == 2
    assert "no build/build.py" in result.proc.stderr and "Traceback" not in result.proc.stderr


def test_missing_local_xla_is_bad_input(tree, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("extends: dbg-cpu\nsource:\n  xla:\n    local_path: no-such-xla\n")
    result = run_build(tree, str(profile), tmp_path / "cache", "--dry-run")
    assert result.proc.returncode == 2
    assert f"{tmp_path / 'no-such-xla'}" in result.proc.stderr and "not a directory" in result.proc.stderr


def test_bad_command_template_is_bad_input(tree, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("extends: dbg-cpu\nbuild:\n  command: [make, '{target}']\n")
    result = run_build(tree, str(profile), tmp_path / "cache", "--dry-run")
    assert result.proc.returncode == 2
    assert "build.command[1]: unknown placeholder {target}" in result.proc.stderr
