"""The CLI builds only the command a command line invokes; every command is reachable."""

from xlatools.cli import COMMANDS, build_app, invoked_command, main


def test_the_invoked_command_is_found_after_root_options():
    assert invoked_command(["run", "prog.py"]) == "run"
    assert invoked_command(["--debug", "pin", "verify"]) == "pin"
    assert invoked_command(["--version"]) is None and invoked_command(["nope"]) is None and invoked_command([]) is None


def test_each_command_builds_alone_and_all_build_together(capsys):
    for name in COMMANDS:
        assert main([name, "--help"]) == 0, name
        assert f"Usage: xlatools {name}" in capsys.readouterr().out
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in COMMANDS)
    assert len(build_app().registered_commands) + len(build_app().registered_groups) == len(COMMANDS)


def test_an_unknown_command_gets_the_whole_cli_and_a_suggestion(capsys):
    assert main(["rnu"]) == 2
    assert "No such command 'rnu'" in capsys.readouterr().err
