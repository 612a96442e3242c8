"""How the CLI reports errors, through the real command line (no jax needed): one message on
stderr, and with --json the same error as JSON on stdout, for every command; a damaged run
manifest is bad input naming the file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xlatools.cli import COMMANDS, build_app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bundles-v1"


def error_of(result) -> dict:
    data = json.loads(result.stdout)
    assert data["ok"] is False and set(data) == {"ok", "error"}, data
    return data["error"]


def test_a_command_error_is_json_on_stdout_with_json(cli, tmp_path):
    result = cli("presets", "show", "hlx", "--json", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.returncode == 2
    error = error_of(result)
    assert (error["type"], error["exit_code"], error["message"]) == ("UsageError", 2, "unknown preset 'hlx'")
    assert "did you mean 'hlo'" in error["hint"] and error["problems"] == [] and error["details"] == []
    assert "error: unknown preset 'hlx'" in result.stderr and "Traceback" not in result.stderr
    plain = cli("presets", "show", "hlx", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert plain.returncode == 2 and plain.stdout == "" and "unknown preset 'hlx'" in plain.stderr


def test_problems_keep_their_file_line_and_key(cli, tmp_path):
    presets = tmp_path / "xlatools" / "presets"
    presets.mkdir(parents=True)
    (presets / "broken.yaml").write_text("x: [unclosed\n")
    (presets / "odd.yaml").write_text("mine:\n  kind: dump\n  xla_flag: [--xla_dump_hlo_as_text]\n")
    result = cli("presets", "list", "--json", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.returncode == 2, result.stderr
    error = error_of(result)
    assert error["type"] == "ProfileError" and error["message"] == "2 problem(s) in preset definitions"
    broken, odd = sorted(error["details"], key=lambda d: d["file"])
    assert (
        broken["file"].endswith("broken.yaml") and broken["line"] == 2 and "malformed YAML" in broken["message"]
    )  # one YAML reader, one wording
    assert odd["key"] == "mine.xla_flag" and odd["hint"] == "did you mean 'xla_flags'?"
    assert any(p.startswith(f"{odd['file']} [mine.xla_flag]: unknown key") for p in error["problems"])


@pytest.mark.parametrize(
    "args",
    [
        ["lower", "m.py:f", "--platform", "tpu", "--json"],
        ["run", "smoke:dot", "--exit-code", "sometimes", "--json"],
        ["doctor", "--no-such-option", "--json"],
    ],
)
def test_a_bad_command_line_is_json_too(cli, tmp_path, args):
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    error = error_of(result)
    assert error["type"] == "UsageError" and error["exit_code"] == 2 and error["message"]
    assert error["message"] in result.stderr


def test_json_among_a_programs_arguments_is_the_programs(cli, tmp_path):
    result = cli("run", "missing.py", "--", "--json", cwd=tmp_path)
    assert result.returncode == 2 and "missing.py" in result.stderr
    assert result.stdout == ""


def test_doctor_with_no_interpreter_says_so_as_json(cli, tmp_path):
    result = cli("doctor", "--python", str(tmp_path / "nope"), "--json")
    assert result.returncode == 2
    assert f"--python {tmp_path / 'nope'}: no such file" == error_of(result)["message"]


def _damaged(tmp_path: Path, how: str) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "run-crash", bundle)
    manifest = bundle / "manifest.json"
    if how == "folder":
        manifest.unlink()
        manifest.mkdir()
    elif how == "fifo":
        manifest.unlink()
        os.mkfifo(manifest)  # reading it would hang
    else:
        data = json.loads(manifest.read_text())
        text = {
            "not JSON": "{not json",
            "a list": "[1, 2]",
            "null": "null",
            "foreign": json.dumps({"hello": 1}),
            "wrong types": json.dumps({**data, "exit_code": "one", "presets": "dump:hlo"}),
        }[how]
        manifest.write_text(text)
    return bundle


@pytest.mark.parametrize(
    "how, says",
    [
        ("not JSON", "Expecting property name"),
        ("a list", "a JSON list, not an object"),
        ("null", "not an object"),
        ("wrong types", "exit_code"),
        ("folder", "not a regular file"),
        ("fifo", "not a regular file"),
        ("foreign", "not an xlatools bundle manifest"),
    ],
)
def test_inspect_of_a_damaged_run_manifest_is_bad_input(cli, tmp_path, how, says):
    bundle = _damaged(tmp_path, how)
    result = cli("inspect", str(bundle), "--json", timeout=30)
    assert result.returncode == 2, result.stderr
    error = error_of(result)
    text = " ".join([error["message"], *error["problems"]])
    assert str(bundle / "manifest.json") in error["message"] and says in text, error
    assert "Traceback" not in result.stderr


def test_inspect_still_reads_the_manifests_of_the_last_release(cli):
    result = cli("inspect", str(FIXTURES / "run-crash"), "--json")
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)["run"]
    assert (run["status"], run["exit_code"], run["signal"]) == ("failed", 1, "SIGSEGV")


def test_the_root_help_lists_every_command_without_building_one():
    code = (
        "import sys\nfrom xlatools.cli import main\nmain(['--help'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('xlatools.commands.') and m not in ('xlatools.commands.options', 'xlatools.commands.registry', 'xlatools.commands.error_output', 'xlatools.commands.helptext')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *help_lines, loaded = done.stdout.strip().splitlines()
    assert loaded == "[]"
    listed = [line.split()[0] for line in help_lines[help_lines.index("Commands:") + 1 :]]
    assert sorted(listed) == sorted(COMMANDS)


def test_each_commands_summary_is_its_help(capsys):
    import typer
    from typer._click.utils import make_default_short_help

    group = typer.main.get_group(build_app())
    for name, entry in COMMANDS.items():
        for limit in (45, 66, 1000):
            assert make_default_short_help(entry.summary, limit) == group.commands[name].get_short_help_str(limit), name
