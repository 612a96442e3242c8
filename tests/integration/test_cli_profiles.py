"""The real `xlatools` CLI, as a subprocess: profiles and bazelrc commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import run_cli

from xlatools import __version__


def test_version_and_help(cli):
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"xlatools {__version__}"
    result = cli("--help")
    assert result.returncode == 0
    for command in ("profiles", "bazelrc"):
        assert command in result.stdout


def test_unknown_command_is_usage_error(cli):
    result = cli("frobnicate")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_profiles_list_json(cli, tmp_path):
    result = cli("profiles", "list", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    names = {row["name"] for row in json.loads(result.stdout)["profiles"]}
    assert {"base", "dbg-cpu", "dbg-cuda", "relwithdebinfo-cuda", "opt-cuda", "asan-cpu"} <= names


def test_profiles_list_table(cli, tmp_path):
    result = cli("profiles", "list", cwd=tmp_path)
    assert result.returncode == 0
    assert "dbg-cuda" in result.stdout and "Full debug CUDA 12" in result.stdout


def test_profiles_show_json_and_explain(cli, tmp_path):
    result = cli("profiles", "show", "dbg-cuda", "--json", "--explain", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["chain"] == ["base", "dbg-cpu", "dbg-cuda"]
    assert data["profile"]["bazel"]["compilation_mode"] == "dbg"
    rows = {row["key"]: row for row in data["provenance"]}
    assert rows["bazel.compilation_mode"]["origin"].endswith("dbg-cpu.yaml:5")
    assert rows["build.wheels[0]"]["origin"].endswith("base.yaml:10")
    assert rows["build.wheels[1]"]["origin"].endswith("dbg-cuda.yaml:11")


def test_profiles_show_explain_table(cli, tmp_path):
    result = cli("profiles", "show", "dbg-cpu", "--explain", cwd=tmp_path)
    assert result.returncode == 0
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("bazel.strip"))
    assert '"never"' in line and "dbg-cpu.yaml:6" in line


def test_profiles_show_yaml(cli, tmp_path):
    result = cli("profiles", "show", "opt-cuda", cwd=tmp_path)
    assert result.returncode == 0 and "backend: cuda" in result.stdout


def test_bad_profile_gives_all_problems_exit_2_no_traceback(cli, tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "oops.yaml").write_text(
        "extends: base\nbazel:\n  compilation_mod: dbg\n  strip: sometimez\n"
    )
    result = cli("profiles", "show", "oops", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert (
        "oops.yaml:3 [bazel.compilation_mod]: unknown key 'compilation_mod' (did you mean 'compilation_mode'?)"
        in result.stderr
    )
    assert "oops.yaml:4 [bazel.strip]" in result.stderr and "sometimez" in result.stderr
    debug = cli("--debug", "profiles", "show", "oops", cwd=tmp_path)
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_profile_given_as_path(cli, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("extends: dbg-cpu\nbazel:\n  jobs: 8\n")
    result = cli("bazelrc", "--profile", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "build:xlatools --jobs=8" in result.stdout and "--compilation_mode=dbg" in result.stdout


def test_validate_all_shipped(cli, tmp_path):
    result = cli("profiles", "validate", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and all(r["warnings"] == [] for r in report["results"])


def test_validate_reports_each_bad_file_and_duplicates(cli, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "fine.yaml").write_text("extends: base\n")
    (first / "broken.yaml").write_text("bazel: [not, a, mapping]\n")
    (first / "twin.yaml").write_text("description: one\n")
    (second / "twin.yaml").write_text("description: two\n")
    env = {"XLATOOLS_PROFILE_PATH": f"{first}:{second}"}
    result = cli("profiles", "validate", "--json", cwd=tmp_path, env=env)
    assert result.returncode == 2
    by_name = {r["profile"].split("/")[-1].removesuffix(".yaml"): r for r in json.loads(result.stdout)["results"]}
    assert by_name["fine"]["ok"] and not by_name["broken"]["ok"] and not by_name["twin"]["ok"]
    assert "defined more than once" in by_name["twin"]["problems"][0]
    human = cli("profiles", "validate", cwd=tmp_path, env=env)
    assert human.returncode == 2 and "2 of" in human.stderr and "invalid" in human.stderr


def test_validate_warns_about_the_debug_info_trap(cli, tmp_path):
    path = tmp_path / "trap.yaml"
    path.write_text("bazel:\n  compilation_mode: dbg\n  per_file_copts:\n    - include: ['.*']\n      options: [-g0]\n")
    result = cli("profiles", "validate", str(path), cwd=tmp_path)
    assert result.returncode == 0
    assert "get no debug info" in result.stderr and "openxla/xla#3381" in result.stderr


def test_schema_command(cli, tmp_path):
    result = cli("profiles", "schema", cwd=tmp_path)
    assert result.returncode == 0
    assert json.loads(result.stdout)["title"] == "xlatools profile"


def test_bazelrc_to_file(cli, tmp_path):
    result = cli("bazelrc", "-p", "dbg-cuda", "--config-name", "mydbg", "-o", str(tmp_path / "x.rc"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "x.rc").read_text()
    assert text.startswith("# bazel config 'mydbg' generated by xlatools")
    assert "build:mydbg --compilation_mode=dbg" in text


def _jax_like_tree(root: Path) -> Path:
    root.mkdir()
    (root / "WORKSPACE").write_text("")
    (root / ".bazelrc").write_text(
        "build -c opt\ntry-import %workspace%/.jax_configure.bazelrc\ntry-import %workspace%/.bazelrc.user\n"
    )
    return root


def test_bazelrc_into_source_tree_is_idempotent_and_keeps_user_lines(cli, tmp_path):
    tree = _jax_like_tree(tmp_path / "jax")
    (tree / ".bazelrc.user").write_text("build --jobs=4  # mine\n")
    first = cli("bazelrc", "-p", "dbg-cpu", "--source", str(tree), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "added" in first.stderr and "warning" not in first.stderr
    text = (tree / ".bazelrc.user").read_text()
    assert text.startswith("build --jobs=4  # mine\n") and "build:xlatools --compilation_mode=dbg" in text
    mtime = (tree / ".bazelrc.user").stat().st_mtime_ns
    again = cli("bazelrc", "-p", "dbg-cpu", "--source", str(tree), cwd=tmp_path)
    assert again.returncode == 0 and "already up to date" in again.stderr
    assert (tree / ".bazelrc.user").stat().st_mtime_ns == mtime
    switched = cli("bazelrc", "-p", "opt-cuda", "--source", str(tree), cwd=tmp_path)
    assert switched.returncode == 0
    text = (tree / ".bazelrc.user").read_text()
    assert "--compilation_mode=opt" in text and "--compilation_mode=dbg" not in text
    assert text.count("# >>> xlatools config") == 1


def test_bazelrc_dry_run_shows_diff_and_writes_nothing(cli, tmp_path):
    tree = _jax_like_tree(tmp_path / "jax")
    result = cli("bazelrc", "-p", "dbg-cpu", "--source", str(tree), "--dry-run", cwd=tmp_path)
    assert result.returncode == 0
    assert "+build:xlatools --strip=never" in result.stdout
    assert not (tree / ".bazelrc.user").exists()


def test_bazelrc_source_checks(cli, tmp_path):
    result = cli("bazelrc", "-p", "dbg-cpu", "--source", str(tmp_path / "nope"), cwd=tmp_path)
    assert result.returncode == 2 and "not a directory" in result.stderr
    (tmp_path / "plain").mkdir()
    result = cli("bazelrc", "-p", "dbg-cpu", "--source", str(tmp_path / "plain"), cwd=tmp_path)
    assert result.returncode == 2 and "not a bazel workspace" in result.stderr
    tree = tmp_path / "noimport"
    tree.mkdir()
    (tree / "WORKSPACE").write_text("")
    result = cli("bazelrc", "-p", "dbg-cpu", "--source", str(tree), cwd=tmp_path)
    assert result.returncode == 0 and "does not import .bazelrc.user" in result.stderr


def test_no_colour_codes_when_not_a_terminal(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "XLATOOLS_PROFILE_PATH")}
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "bad.yaml").write_text("bazel: {strip: maybe}\n")
    result = subprocess.run(
        [sys.executable, "-m", "xlatools", "profiles", "show", "bad"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "error:" in result.stderr
    assert "\x1b[" not in result.stderr


@pytest.mark.parametrize("columns", ["80", ""])  # a narrow terminal; no terminal at all
def test_explain_never_cuts_the_origin(tmp_path, columns):
    deep = tmp_path / ("a-rather-long-folder-name-for-profiles-" * 3) / "profiles"
    deep.mkdir(parents=True)
    (deep / "mine.yaml").write_text(
        'extends: dbg-cpu\ndescription: "' + "words " * 30 + '"\nbazel:\n  compilation_mode: opt\n'
    )
    env = {"XLATOOLS_PROFILE_PATH": str(deep), "COLUMNS": columns}
    data = json.loads(run_cli("profiles", "show", "mine", "--json", "--explain", cwd=tmp_path, env=env).stdout)
    result = run_cli("profiles", "show", "mine", "--explain", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for row in data["provenance"]:
        file, line = row["origin"].rsplit(":", 1)
        label = "<path>" if (tmp_path / file).resolve().parent == deep.resolve() else "<shipped>"
        short = f"{label}/{Path(file).name}:{line}"
        assert any(ln.startswith(row["key"] + " ") and ln.endswith("  " + short) for ln in lines), (row, result.stdout)
    assert f"<path> = {deep}" in result.stderr and "<shipped> = " in result.stderr
    if columns:
        assert max(len(ln) for ln in lines) <= 80, result.stdout
    else:
        assert len(next(ln for ln in lines if ln.startswith("description "))) > 180, "no terminal: whole lines"
