"""`xlatools debug setup`: the written gdb init file maps a debug-built C library's recorded
/proc/self/cwd paths back to its tree, so real gdb shows its source lines; launch.json is merged."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.helpers import require

LIBRARY = """\
int xlatools_probe_add(int a, int b) {
    int sum = a + b;  /* the line gdb must show */
    return sum;
}
"""
VSCODE_TEMPLATE = """\
{
    // Use IntelliSense to learn about possible attributes.
    // Hover to view descriptions of existing attributes.
    "version": "0.2.0",
    "configurations": [
        {
            "name": "Mine",
            "type": "debugpy",
            "request": "launch",
            "program": "${file}", // keep this comment
        },
    ]
}
"""


def _gdb_source_line(gdb, library, cwd, extra):
    caller = f"import ctypes; ctypes.CDLL({str(library)!r}).xlatools_probe_add(1, 2)"
    argv = [
        gdb,
        "-nx",
        "-batch",
        *extra,
        "-ex",
        "set breakpoint pending on",
        "-ex",
        "break xlatools_probe_add",
        "-ex",
        "run",
        "-ex",
        "list xlatools_probe_add,+2",
        "--args",
        sys.executable,
        "-c",
        caller,
    ]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120).stdout


def test_gdb_finds_sources_through_the_written_substitute_paths(xl, gdb, tmp_path):
    gcc = shutil.which("gcc")
    require("gcc", gcc is not None, "apt-get install gcc (builds the debug C library)")
    tree, elsewhere = tmp_path / 'the "jax" tree', tmp_path / "elsewhere"  # gdb reads quotes and spaces back whole
    (tree / "lib").mkdir(parents=True)
    elsewhere.mkdir()
    (tree / "lib" / "probe.c").write_text(LIBRARY)
    library = tmp_path / "libprobe.so"
    # As bazel does: compiled in the tree, paths recorded as /proc/self/cwd/...
    subprocess.run(
        [
            gcc,
            "-g",
            "-O0",
            "-shared",
            "-fPIC",
            f"-fdebug-prefix-map={tree}=/proc/self/cwd",
            "lib/probe.c",
            "-o",
            str(library),
        ],
        cwd=tree,
        check=True,
    )
    assert "the line gdb must show" not in _gdb_source_line(gdb, library, elsewhere, [])
    (tree / ".vscode").mkdir()
    (tree / ".vscode" / "launch.json").write_text(VSCODE_TEMPLATE)
    done = xl(
        "debug", "setup", "--source", str(tree), "--profile", "dbg-cpu", "--output-base", str(tmp_path / "ob"), "--json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    gdbinit = tree / ".xlatools" / "gdbinit"
    assert sorted(result["written"]) == sorted([str(gdbinit), str(tree / ".vscode" / "launch.json")])
    assert "the line gdb must show" in _gdb_source_line(gdb, library, elsewhere, ["-x", str(gdbinit)])
    launch = (tree / ".vscode" / "launch.json").read_text()
    assert "// keep this comment" in launch and "// Use IntelliSense" in launch
    from xlatools.debug.jsonc import loads

    names = [c["name"] for c in loads(launch, "launch.json")["configurations"]]
    assert names == ["Mine", "xlatools: Python (jaxlib dbg-cpu)", "xlatools: (gdb) Attach (jaxlib dbg-cpu)"]
    attach = loads(launch, "launch.json")["configurations"][2]
    assert attach["sourceFileMap"]["/proc/self/cwd"] == str(tree)
    again = xl("debug", "setup", "--source", str(tree), "--output-base", str(tmp_path / "ob"), "--json")
    assert json.loads(again.stdout)["written"] == [] and (tree / ".vscode" / "launch.json").read_text() == launch


def test_setup_warns_for_a_profile_without_debug_info_and_refuses_broken_json(xl, tmp_path):
    tree = tmp_path / "tree"
    (tree / ".vscode").mkdir(parents=True)
    done = xl("debug", "setup", "--source", str(tree), "--profile", "base", "--output-base", str(tmp_path), "--dry-run")
    assert done.returncode == 0 and "gives XLA sources no debug info" in done.stderr
    assert not (tree / ".vscode" / "launch.json").exists()
    (tree / ".vscode" / "launch.json").write_text('{"configurations": [ {"name": "x" ]}')
    done = xl("debug", "setup", "--source", str(tree), "--output-base", str(tmp_path))
    assert done.returncode == 2 and "launch.json: not valid JSON with comments" in done.stderr
    assert not (tree / ".xlatools" / "gdbinit").exists(), "nothing written when one file cannot be merged"


def test_doctor_reports_gdb_and_ptrace(xl, gdb):
    checks = {c["name"]: c for c in json.loads(xl("doctor", "--json").stdout)["checks"]}
    assert checks["gdb"]["status"] == "ok" and "GNU gdb" in checks["gdb"]["evidence"]
    assert checks["ptrace (debugger attach)"]["status"] in ("ok", "warn")


def test_setup_never_writes_through_a_link_and_merges_after_comments(xl, tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside.json"
    (tree / ".vscode").mkdir(parents=True)
    outside.write_text('{"configurations": []}')
    (tree / ".vscode" / "launch.json").symlink_to(outside)
    done = xl("debug", "setup", "--source", str(tree), "--output-base", str(tmp_path / "ob"))
    assert done.returncode == 2 and "is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert outside.read_text() == '{"configurations": []}' and not (tree / ".xlatools").exists()
    # A list whose last element is followed by a // comment: the comma must not land inside the comment.
    (tree / ".vscode" / "launch.json").unlink()
    (tree / ".vscode" / "launch.json").write_text('{"configurations": [ {"name": "x // y", "a": "]}"} // end ]\n]}\n')
    for _ in range(2):  # the second run changes nothing
        done = xl("debug", "setup", "--source", str(tree), "--output-base", str(tmp_path / "ob"))
        assert done.returncode == 0, done.stderr
    from xlatools.debug.jsonc import loads

    launch = (tree / ".vscode" / "launch.json").read_text()
    assert [c["name"] for c in loads(launch, "launch.json")["configurations"]] == [
        "x // y",
        "xlatools: Python (jaxlib dbg-cpu)",
        "xlatools: (gdb) Attach (jaxlib dbg-cpu)",
    ]
    assert "// end ]" in launch
