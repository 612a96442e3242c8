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


def test_help_lines_can_be_copied(capsys, monkeypatch):
    """A help page never breaks a word at its hyphen (`--xla-` / `flag=...`, `--bad-` / `exit`): a copied line
    works. Every command and subcommand, at two terminal widths (a word longer than the help column is still
    cut: there is no room for it)."""
    import re

    import typer

    def leaves(command, path):
        subs = getattr(command, "commands", None)
        if not subs:
            return [path]
        return [leaf for name, sub in subs.items() for leaf in leaves(sub, [*path, name])]

    paths = leaves(typer.main.get_command(build_app()), [])
    assert len(paths) > len(COMMANDS)
    for columns in ("64", "100"):
        monkeypatch.setenv("COLUMNS", columns)
        for path in paths:
            assert main([*path, "--help"]) == 0, path
            page = capsys.readouterr().out
            broken = [line for line in page.splitlines() if re.search(r"\w-$", line)]
            assert not broken, (path, columns, broken)
            if path == ["run"] and columns == "100":  # narrower, the help column is shorter than the example
                assert "--xla-flag=--xla_dump_hlo_pass_re=.*" in page


def test_m_is_a_python_module_and_an_hlo_module_is_module_only(capsys, tmp_path):
    """-m was --module's short form in the commands that read dumps: now it says which option to use (exit 2),
    never taken for a Python module there; the help shows --module alone."""
    for argv in (
        ["inspect", str(tmp_path), "-m", "jit_f"],
        ["replay", str(tmp_path), "-m", "jit_f"],
        ["reduce", str(tmp_path), "-m", "jit_f"],
        ["diff", str(tmp_path), str(tmp_path), "-m", "jit_f"],
        ["report", str(tmp_path), "-m", "jit_f"],
        ["repro", "pack", str(tmp_path), "-m", "jit_f"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "-m names a Python module" in err and "use --module jit_f" in err and "Traceback" not in err, argv
        assert main([*argv[: argv.index("-m")], "--help"]) == 0
        shown = capsys.readouterr().out
        assert "--module" in shown and " -m" not in shown, argv
    assert main(["bisect", "passes", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # the help wraps lines
    assert "Run a Python module (python -m MODULE)" in shown and "Not -m, which names a Python module" in shown
