"""`xlatools reduce` for real: a float64 miscompile of jaxlib 0.6.2 against jaxlib 0.10.2, an --error and a
--script oracle, a refused input, resuming, a crash's native backtrace. Cost: about 80-110 s on 2 cores (two dumping
runs, four reductions; the crash's, about 20 s, is mostly the reduced module's one replay under gdb)."""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path

from tests.helpers import bundles, manifest

README = Path(__file__).resolve().parents[3] / "README.md"


def test_float64_miscompile_reduces_to_a_few_instructions(xl, tmp_path, student_t_bundle, miscompile_python):
    result = xl(
        "reduce",
        str(student_t_bundle),
        "--python",
        miscompile_python,
        "--reference-python",
        sys.executable,
        "--jobs",
        "2",
        "--out",
        "out",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["instructions_before"] >= 70 and summary["instructions_after"] <= 12
    # the README's NaN example says what this prints
    claimed = re.search(r"goes from (\d+) to (\d+) instructions", README.read_text().replace("\n", " "))
    assert claimed and summary["instructions_before"] == int(claimed[1]), summary
    assert summary["instructions_after"] <= int(claimed[2]), summary
    assert not summary["flaky"] and summary["oracle"] == "mismatch"
    # why it stopped: a whole round of the six strategies found nothing smaller (issue 37 item 9)
    assert "found no smaller module" in summary["ended"]["reason"] and len(summary["ended"]["strategies"]) == 6
    bundle = Path(summary["bundle"])
    assert manifest(bundle)["status"] == "ok"
    reduced = (bundle / "reduced.hlo.txt").read_text()
    assert "exponential" in reduced and "constant(nan)" in reduced
    issue = (bundle / "ISSUE.md").read_text()
    for part in ("jaxlib 0.6.2", "jaxlib 0.10.2", "## Minimal HLO", "## Inputs", "Expected", "run_hlo_module"):
        assert part in issue
    assert (bundle / "repro.tar.gz").is_file() and (bundle / "rounds.json").is_file()
    # The reduced module still mismatches when replayed on its own, with its inputs.
    alone = xl(
        "replay",
        str(bundle / "reduced.hlo.txt"),
        "--inputs",
        str(bundle / "inputs.npz"),
        "--python",
        miscompile_python,
        "--reference-python",
        sys.executable,
        "--out",
        "alone",
        "--json",
    )
    assert alone.returncode == 1, alone.stderr
    assert json.loads(alone.stdout)["modules"][0]["outcome"] == "mismatch"
    # Running the same command again resumes: nothing left to try but cached verdicts.
    again = xl(
        "reduce",
        str(student_t_bundle),
        "--python",
        miscompile_python,
        "--reference-python",
        sys.executable,
        "--jobs",
        "2",
        "--out",
        "out",
        "--json",
    )
    assert again.returncode == 0 and "resuming" in again.stderr
    assert json.loads(again.stdout)["instructions_after"] == summary["instructions_after"]


def test_error_oracle_keeps_the_failing_custom_call(xl, solve_bundle, old_jax_python):
    # jaxlib 0.10.2's LAPACK FFI targets are unknown to jaxlib 0.4.30: a real runtime error there.
    result = xl(
        "reduce",
        str(solve_bundle),
        "--module",
        "jit_f",
        "--python",
        old_jax_python,
        "--error",
        "No registered implementation for custom call",
        "--out",
        "out",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["instructions_after"] <= 3 < summary["instructions_before"]
    assert "lapack_" in open(summary["files"]["reduced.hlo.txt"]).read()


def test_a_crashing_module_leaves_its_native_backtrace(xl, solve_bundle):
    import shutil

    from tests.helpers import require

    require("gdb", shutil.which("gdb") is not None, "apt-get install gdb (native backtraces of crashes)")
    # jaxlib 0.10.x aborts (std::length_error) compiling any module with this flag; elsewhere the target aborts on purpose.
    version = manifest(solve_bundle)["jax"]["jaxlib"]
    args, env = (
        (["--xla-flag=--xla_cpu_parallel_codegen_split_count=-5"], {})
        if version.startswith("0.10.")
        else ([], {"XLATOOLS_REPLAY_INJECT_ABORT": "compile"})
    )
    result = xl(
        "reduce", str(solve_bundle), "--module", "jit_f", *args, "--error", "SIGABRT", "--out", "out", "--json", env=env
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    bundle = Path(summary["bundle"])
    assert manifest(bundle)["native_backtrace"] == "native-backtrace.txt"
    assert summary["files"]["native-backtrace.txt"] == str(bundle / "native-backtrace.txt")
    text = (bundle / "native-backtrace.txt").read_text()
    assert "(SIGABRT)" in text and "thread apply all bt" in text and "Fatal Python error: Aborted" in text
    issue = (bundle / "ISSUE.md").read_text()
    assert "[native-backtrace.txt](native-backtrace.txt)" in issue
    frames = issue.split("Top native frames", 1)[1].split("```")[1].strip().splitlines()
    assert frames and all(line.startswith("#") for line in frames)
    if version.startswith("0.10."):  # the compiler's own frames, symbolized from jaxlib's symbol table
        assert "libjax_common.so" in text and any("xla::cpu::" in line for line in frames)


def test_script_oracle_and_a_refused_input(xl, tmp_path, solve_bundle):
    script = tmp_path / "has_tanh.sh"
    script.write_text('#!/bin/sh\ngrep -q " tanh(" "$1" && exit 1\nexit 0\n')
    script.chmod(0o755)
    result = xl("reduce", str(solve_bundle), "--module", "jit_f", "--script", str(script), "--out", "out", "--json")
    assert result.returncode == 0, result.stderr
    reduced = open(json.loads(result.stdout)["files"]["reduced.hlo.txt"]).read()
    assert " tanh(" in reduced and json.loads(result.stdout)["instructions_after"] <= 3
    plan = manifest(Path(json.loads(result.stdout)["bundle"]))["plan"]  # the reduction names its inputs
    assert plan["input_source"]["kind"] in ("snapshot", "random"), plan.get("input_source")
    # ISSUE.md is filled from what xlatools knows (the script runs no replay), and the pack says what it cannot show.
    bundle = Path(json.loads(result.stdout)["bundle"])
    issue = (bundle / "ISSUE.md").read_text()
    jaxlib = manifest(solve_bundle)["jax"]["jaxlib"]
    assert f"(jaxlib {jaxlib})" in issue and "jax ?" not in issue and "device ?" not in issue
    assert "parameter(0)" not in reduced or "(no parameters)" not in issue
    assert "`repro run` answers nothing-to-reproduce (exit 5)" in issue
    with tarfile.open(bundle / "repro.tar.gz") as tar:
        index = json.loads(tar.extractfile("repro/pack.json").read())
    assert index["oracle"].startswith("the script exits 1-127") and "the script exited 1" in index["oracle"]
    packed = xl("repro", "run", str(bundle / "repro.tar.gz"), "--out", "rerun", "--json")
    assert packed.returncode == 5 and "which a pack cannot replay" in json.loads(packed.stdout)["reason"], packed.stderr
    # A damaged state file is bad input naming it (not silently forgotten work).
    state = Path(json.loads(result.stdout)["state"]) / "state.json"
    state.write_text(json.dumps({**json.loads(state.read_text()), "counters": {"oracle_calls": "lots"}}))
    damaged = xl("reduce", str(solve_bundle), "--module", "jit_f", "--script", str(script), "--out", "out", "--json")
    assert damaged.returncode == 2 and str(state) in damaged.stderr and "counters.oracle_calls" in damaged.stderr
    assert json.loads(damaged.stdout)["error"]["exit_code"] == 2
    # The same interpreter as its own CPU reference: nothing differs, so nothing to reduce (exit 2, no bundle).
    refused = xl("reduce", str(solve_bundle), "--module", "jit_f", "--reference", "cpu", "--out", "refused")
    assert refused.returncode == 2, refused.stderr
    assert "not interesting" in refused.stderr and not bundles(tmp_path / "refused")  # nor a state folder


NAN_PROGRAM = """import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)

@jax.jit
def f(x):
    nan = jnp.log(jnp.float64(-1.0))  # a constant NaN: jaxlib 0.6.2 returns garbage for its exp (jax#29537)
    return jnp.exp(nan + 0.0 * x), jnp.sin(x) * 2.0

print(f(np.linspace(-2.0, 3.0, 8)))
"""


def test_the_snapshot_oracle_says_why_it_stopped_and_what_would_go_further(xl, tmp_path, miscompile_python):
    """The snapshot's recorded result (jaxlib 0.6.2's garbage) against this jaxlib's NaN: only outputs and inlining
    apply, and the reduction says so when it stops, with what would take it further (issue 37 item 9)."""
    (tmp_path / "prog.py").write_text(NAN_PROGRAM)
    ran = xl("run", "prog.py", "--python", miscompile_python, "--preset", "dump:hlo", "--preset", "dump:snapshots")
    assert ran.returncode == 0, ran.stderr
    result = xl("reduce", "artifacts/latest", "--module", "jit_f", "--rechecks", "1", "--out", "out", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["oracle"] == "recorded" and summary["instructions_after"] < summary["instructions_before"]
    assert summary["verdict"] == "8/8 elements differ (8 NaN on one side only)"  # not `max abs error 0`
    ended = summary["ended"]
    assert "found no smaller module that is still interesting" in ended["reason"]
    assert [line.split(":")[0] for line in ended["strategies"]] == ["inline", "outputs"]
    assert "the snapshot's recorded result judges only the outputs" in ended["not_judged"][0]
    assert any("--reference cpu" in line and "--reference-python" in line for line in ended["further"])
    issue = (Path(summary["bundle"]) / "ISSUE.md").read_text()
    assert "device cpu\n" in issue and "device cpu cpu" not in issue


def test_replay_isolate_names_the_first_mismatching_instruction(xl, student_t_bundle, miscompile_python):
    result = xl(
        "replay",
        str(student_t_bundle),
        "--python",
        miscompile_python,
        "--reference-python",
        sys.executable,
        "--isolate",
        "--out",
        "out",
        "--json",
    )
    assert result.returncode == 1, result.stderr  # the module mismatches
    isolation = json.loads(result.stdout)["isolation"]
    # Every instruction alone agrees (the bug needs exp fused with a constant NaN); in context exp is the first.
    assert isolation["first_mismatch"] is None
    first = isolation["first_mismatch_in_context"]
    assert first["opcode"] == "exponential" and first["operands"]
    assert Path(isolation["file"]).is_file()
    assert "\ninputs: " in (Path(isolation["file"]).parent / "isolate.txt").read_text()
