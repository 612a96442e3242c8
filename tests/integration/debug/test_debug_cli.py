"""`xlatools debug` with real gdb on real jaxlibs: the pass map from the target's own symbols,
a stop where a pass starts (backtrace, Python stack, the module it receives), bad pass names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

PROGRAM = """\
import jax, jax.numpy as jnp

@jax.jit
def f(x, y):
    return jnp.sin(x) * 2.0 + y * 1.0

print(f(jnp.ones(4), jnp.ones(4)))
"""


def _passes(xl, *args) -> dict:
    done = xl("debug", "passes", "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_pass_map_names_what_a_real_dump_runs(xl, gdb, compare_runs):
    data = _passes(xl)
    by_pass = {row["pass"]: row for row in data["passes"]}
    assert by_pass["algsimp"]["cls"] == "xla::AlgebraicSimplifier"
    assert by_pass["algsimp"]["entry_display"] == "xla::AlgebraicSimplifier::RunImpl"
    expander = by_pass["rng-expander"]
    assert (expander["cls"], expander["entry_from"]) == ("xla::RngExpander", "xla::OpExpanderPass")
    # The passes a real per-pass dump names (module.NNNN.<pipeline>.after_X.before_Y) are in the map read
    # from the symbols; nested pipelines are named like passes but are not pass classes.
    pipelines, dumped = {"pipeline-start", "pipeline-end"}, set()
    for path in (compare_runs["base"] / "xla_dump").iterdir():
        found = re.search(r"\.\d{4}\.([^.]+)\.after_([^.]+)\.before_([^.]+)\.txt$", path.name)
        if found:
            pipelines.add(found[1])
            dumped.update(found.groups()[1:])
    missing = sorted(dumped - pipelines - set(by_pass))
    # sub-byte-size-setter's name() picks one of two strings at run time: no constant to read.
    assert len(dumped - pipelines) >= 10 and missing in ([], ["sub-byte-size-setter"]), missing


def test_break_pass_stops_with_backtrace_python_stack_and_module(xl, gdb, tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = xl("debug", "prog.py", "--break-pass", "algsimp", "--hlo-module", "^jit_f$", "--json", timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "ok" and result["program_outcome"] == "exit 0"
    stop = result["stops"][0]
    assert stop["pass"] == "algsimp" and stop["class"] == "xla::AlgebraicSimplifier"
    folder = Path(result["bundle"]) / stop["dir"]
    backtrace = (folder / "backtrace.txt").read_text()
    assert "xla::AlgebraicSimplifier::RunImpl" in backtrace and "xla::HloPassPipeline::RunPassesInternal" in backtrace
    assert 'prog.py", line 7' in (folder / "python-stack.txt").read_text()
    assert (folder / "module-before.txt").read_text().startswith("HloModule jit_f")
    assert "stop 1: pass algsimp" in (Path(result["bundle"]) / "summary.txt").read_text()
    assert json.loads((Path(result["bundle"]) / "manifest.json").read_text())["kind"] == "debug"


def test_interactive_session_hands_gdb_the_commands_after_recording_the_stop(gdb, tmp_path, probe_cache):
    from tests.helpers import run_cli

    (tmp_path / "prog.py").write_text(PROGRAM)
    done = run_cli(
        "debug",
        "prog.py",
        "--break-pass",
        "algsimp",
        "--interactive",
        "--out",
        "out",
        cwd=tmp_path,
        env={"XLATOOLS_CACHE_DIR": str(probe_cache), "JAX_PLATFORMS": "cpu"},
        timeout=600,
        input="print 6*7\nkill\nquit\n",
    )
    assert done.returncode == 0, done.stderr
    assert "gdb is yours now" in done.stdout and "$1 = 42" in done.stdout
    assert "stop 1: pass algsimp" in done.stderr


def test_shared_entry_stops_for_its_class_on_jaxlib_0_4_30(xl, gdb, old_jax_python, tmp_path):
    """jaxlib 0.4.30's passes override Run(). Every expander runs OpExpanderPass::Run: the breakpoint
    there stops only for the named pass's class (read from the object's vtable)."""
    by_pass = {row["pass"]: row for row in _passes(xl, "--python", old_jax_python)["passes"]}
    assert by_pass["algsimp"]["entry_display"] == "xla::AlgebraicSimplifier::Run"
    assert by_pass["rng-expander"]["entry_display"] == "xla::OpExpanderPass::Run"
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = xl(
        "debug",
        "prog.py",
        "--break-pass",
        "rng-expander",
        "--python",
        old_jax_python,
        "--json",
        "--no-module",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    stop = json.loads(done.stdout)["stops"][0]
    assert stop["class"] == "xla::RngExpander" and stop["function"].startswith("xla::OpExpanderPass::Run(")


def test_pass_map_of_jaxlib_0_12(xl, gdb, new_jax_python):
    by_pass = {row["pass"]: row for row in _passes(xl, "--python", new_jax_python)["passes"]}
    assert by_pass["algsimp"]["entry_display"] == "xla::AlgebraicSimplifier::RunImpl"
    assert len(by_pass) >= 60


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--break-pass", "algsimpp"], "did you mean algsimp"),
        ([], "nothing to stop at"),
        (["--break-pass", "algsimp", "--hlo-module", "("], "not a regular expression"),
    ],
)
def test_bad_debug_input_exits_2_before_anything_runs(xl, gdb, tmp_path, args, expected):
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = xl("debug", "prog.py", *args, "--out", "out")
    assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_session_past_its_timeout_ends_as_timeout_with_its_records(xl, gdb, tmp_path):
    """The one bundle lifecycle: gdb and the program are stopped, the manifest says timeout (124)."""
    from xlatools.records import read_bundle

    (tmp_path / "sleepy.py").write_text("import time\ntime.sleep(120)\n")
    done = xl("debug", "sleepy.py", "--break", "abort", "--timeout", "3", "--json", timeout=120)
    assert done.returncode == 124, done.stderr
    bundle = Path(json.loads(done.stdout)["bundle"])
    record = read_bundle(bundle, kinds=("debug",))
    assert (record.status, record.exit_code, record.stops) == ("timeout", 124, [])
    assert "status: timeout" in (bundle / "summary.txt").read_text()
    assert "gdb.log" in [f.path for f in record.files]
