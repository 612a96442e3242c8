"""`xlatools replay` on a real dumping run: text, proto and snapshot; references; mismatches; crashes; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import bundles, manifest
from tests.integration.replay.conftest import run_dir


def _json(result):
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout)


def _by_name(data):
    return {m["name"]: m for m in data["modules"]}


@pytest.fixture(scope="module")
def three_ways(dumped, tmp_path_factory, replay_env):
    """The bundle replayed from text, proto, the snapshot and module.mlir (each module, one run each)."""
    from tests.helpers import run_cli

    bundle, _ = dumped
    work = tmp_path_factory.mktemp("three-ways")
    found = {}
    for how in ("text", "proto", "snapshot", "mlir"):
        result = run_cli(
            "replay", str(bundle), "--from", how, "--json", "--out", "out", cwd=work, env=replay_env, timeout=300
        )
        assert result.returncode == 0, result.stderr
        found[how] = _json(result)
    return found


@pytest.mark.parametrize("how", ["text", "proto", "snapshot", "mlir"])
def test_replay_gives_the_programs_own_outputs(three_ways, dumped, how):
    _, expected = dumped
    modules = _by_name(three_ways[how])
    assert set(modules) == {"jit_fn", "jit_clean"}  # no helper modules in this program
    for name, key in (("jit_fn", "fn"), ("jit_clean", "clean")):
        module = modules[name]
        assert module["outcome"] == "ok", module
        # --from snapshot: its arguments and result, with the unoptimised module (the snapshot's own is optimised):
        # its StableHLO first (module.mlir), as --from auto
        assert module["runs"][0]["loaded_from"]["kind"] == {"snapshot": "mlir"}.get(how, how)
        assert [c["against"] for c in module["comparisons"]] == ["snapshot"] and module["comparisons"][0]["ok"]
        assert module["input_source"]["kind"] == "snapshot" and ".snapshot." in module["input_source"]["path"]
        with np.load(run_dir(module) / "outputs.npz") as out:
            np.testing.assert_array_equal(out["a0"], expected[key])
        assert module["runs"][0]["run_s"]["count"] == 1 and module["runs"][0]["compile_s"] > 0


def test_text_proto_and_mlir_replays_share_the_fingerprint(three_ways):
    text, proto, mlir = (_by_name(three_ways[how]) for how in ("text", "proto", "mlir"))
    for name in ("jit_fn", "jit_clean"):
        assert text[name]["fingerprint"] and text[name]["fingerprint"] == proto[name]["fingerprint"]
        assert text[name]["fingerprint"] == mlir[name]["fingerprint"]
        assert text[name]["outputs"] == proto[name]["outputs"] == mlir[name]["outputs"]  # digests


def test_replay_bundle_is_complete(three_ways):
    data = manifest(__import__("pathlib").Path(three_ways["text"]["bundle"]))
    assert data["kind"] == "replay" and data["status"] == "ok" and data["exit_code"] == 0
    paths = {f["path"] for f in data["files"]}
    assert any(p.endswith("test/optimized.txt") for p in paths) and "summary.txt" in paths


def test_cross_version_reference_pythons(dumped, replay, old_jax_python, new_jax_python):
    bundle, _ = dumped
    result = replay(
        "replay",
        str(bundle),
        "--module",
        "jit_fn",
        "--iterations",
        "3",
        "--json",
        "--out",
        "out",
        "--reference-python",
        old_jax_python,
        "--reference-python",
        new_jax_python,
    )
    assert result.returncode == 0, result.stderr
    module = _by_name(_json(result))["jit_fn"]
    versions = [r["versions"]["jaxlib"] for r in module["runs"]]
    assert versions[1] == "0.4.30" and versions[2].startswith("0.12")
    # references are named by their jax version
    newer = f"reference-jax-{module['runs'][2]['versions']['jax']}"
    assert [c["against"] for c in module["comparisons"]] == ["snapshot", "reference-jax-0.4.30", newer]
    assert all(c["ok"] for c in module["comparisons"])
    assert "stack-frame tables dropped" in module["runs"][1]["loaded_from"]["how"]  # 0.4.30 reads new text
    assert module["runs"][0]["run_s"]["count"] == 3


def test_altered_snapshot_result_is_a_mismatch(dumped, replay, tmp_path):
    from xlatools.replay.hloproto import schema

    bundle, _ = dumped
    original = next((bundle / "xla_dump").glob("*jit_fn.snapshot.*.pb"))
    snapshot = schema()["HloSnapshot"]()
    snapshot.ParseFromString(original.read_bytes())
    values = list(snapshot.result.f32s)
    values[0] += 1.0
    values[3] -= 0.5
    del snapshot.result.f32s[:]
    snapshot.result.f32s.extend(values)
    altered = tmp_path / "module_0000.jit_fn.snapshot.1.pb"
    altered.write_bytes(snapshot.SerializeToString())
    # The snapshot's module is the optimised one: it replays with its unoptimised sibling.
    sibling = original.name.split(".snapshot.")[0] + ".before_optimizations.txt"
    (tmp_path / "module_0000.jit_fn.before_optimizations.txt").write_bytes((original.parent / sibling).read_bytes())
    result = replay("replay", str(altered), "--json", "--out", "out")
    assert result.returncode == 1, result.stderr
    module = _json(result)["modules"][0]
    assert module["outcome"] == "mismatch"
    check = module["comparisons"][0]
    assert check["against"] == "snapshot" and check["mismatches"] == 2 and check["elements"] == 6
    assert check["max_abs_error"] == pytest.approx(1.0)


def test_numerics_changing_reference_flag_is_a_mismatch(dumped, replay, tmp_path):
    bundle, _ = dumped
    job_summary = tmp_path / "summary.md"
    result = replay(
        "replay",
        str(bundle),
        "--module",
        "jit_clean",
        "--reference",
        "cpu",
        "--json",
        "--out",
        "out",
        "--reference-xla-flag=--xla_cpu_enable_fast_math=true",
        "--reference-xla-flag=--xla_cpu_fast_math_honor_nans=false",
        env={"GITHUB_STEP_SUMMARY": str(job_summary)},
    )
    assert result.returncode == 1, result.stderr
    assert "### xlatools replay" in job_summary.read_text() and "failed (exit 1)" in job_summary.read_text()
    module = _json(result)["modules"][0]
    assert module["outcome"] == "mismatch" and module["failed_run"] == "reference-cpu"
    snapshot, reference = module["comparisons"]
    assert snapshot["ok"]
    assert reference["mismatches"] == 2 and reference["nan_mismatches"] == 2  # isnan folded away: NaNs stay


def test_compiler_abort_is_a_crash_with_its_signal(dumped, replay, tmp_path):
    bundle, _ = dumped
    # jaxlib 0.10.x aborts (std::length_error) on this flag while compiling; elsewhere the target aborts on purpose.
    version = manifest(bundle)["jax"]["jaxlib"]
    args, env = (
        (["--xla-flag=--xla_cpu_parallel_codegen_split_count=-5"], {})
        if version.startswith("0.10.")
        else ([], {"XLATOOLS_REPLAY_INJECT_ABORT": "compile"})
    )
    result = replay("replay", str(bundle), "--module", "jit_fn", "--out", "out", *args, env=env)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "SIGABRT" in result.stdout + result.stderr
    data = manifest(bundles(tmp_path / "out")[0])
    assert data["status"] == "failed" and data["files"]
    run = data["modules"][0]["runs"][0]
    assert (run["failure"], run["signal"], run["phase"]) == ("crash", "SIGABRT", "compile")
    assert run["log_tail"]
    # The job's folder holds the native backtrace of the abort (Python part at least; native frames with gdb).
    backtrace = Path(run["dir"]) / "native-backtrace.txt"
    assert str(backtrace) in run["message"] and "Fatal Python error: Aborted" in backtrace.read_text()
    assert run["native_backtrace"] == str(backtrace)


def test_snapshot_with_a_custom_call_the_target_lacks_is_a_compile_error(replay, tmp_path):
    import subprocess
    import sys

    from xlatools.replay.hloproto import schema

    text = (
        "HloModule custom\n\nENTRY main {\n  p = f32[4] parameter(0)\n"
        '  ROOT r = f32[4] custom-call(p), custom_call_target="xlatools_missing_target"\n}\n'
    )
    (tmp_path / "custom.hlo").write_text(text)
    to_proto = (
        "import sys; from jax._src.lib import xla_client as xc; ns = getattr(xc, 'hlo', None) or xc._xla; "
        "sys.stdout.buffer.write(ns.hlo_module_from_text(open(sys.argv[1]).read()).as_serialized_hlo_module_proto())"
    )
    module = subprocess.run(
        [sys.executable, "-c", to_proto, str(tmp_path / "custom.hlo")], capture_output=True, check=True, timeout=300
    ).stdout
    snapshot = schema()["HloSnapshot"]()
    snapshot.hlo.hlo_module = module
    argument = snapshot.arguments.add()
    argument.shape.element_type = 11  # F32
    argument.shape.dimensions.append(4)
    argument.f32s.extend([1, 2, 3, 4])
    (tmp_path / "module_0000.custom.snapshot.1.pb").write_bytes(snapshot.SerializeToString())
    (tmp_path / "module_0000.custom.before_optimizations.txt").write_text(text)  # the unoptimised sibling
    result = replay("replay", "module_0000.custom.snapshot.1.pb", "--json", "--out", "out")
    assert result.returncode == 1, result.stderr
    run = _json(result)["modules"][0]["runs"][0]
    assert (run["failure"], run["phase"]) == ("compile-error", "compile") and "xlatools_missing_target" in run[
        "message"
    ]


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("notes.txt", b"this is not HLO\n", "not HLO text"),
        ("module_0000.jit_f.cpu_after_optimizations.txt", b"HloModule jit_f\n", "does not compile again"),
        ("module_0000.jit_f.before_optimizations.hlo.pb", b"\x0a\x05jit_f\x1a\xff\xff", "not a valid"),
    ],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(replay, tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    result = replay("replay", name, "--out", "out")
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_truncated_snapshot_is_a_clear_error(dumped, replay, tmp_path):
    bundle, _ = dumped
    original = next((bundle / "xla_dump").glob("*jit_fn.snapshot.*.pb")).read_bytes()
    (tmp_path / "module_0000.jit_fn.snapshot.7.pb").write_bytes(original[: len(original) // 2])
    result = replay("replay", "module_0000.jit_fn.snapshot.7.pb", "--out", "out")
    assert result.returncode == 2 and "HloSnapshot" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_inputs_that_do_not_fit_exit_2(dumped, replay, tmp_path):
    bundle, _ = dumped
    np.savez(tmp_path / "in.npz", np.zeros(3, np.float32))
    result = replay("replay", str(bundle), "--module", "jit_fn", "--inputs", "in.npz", "--json", "--out", "out")
    assert result.returncode == 2
    assert _json(result)["modules"][0]["outcome"] == "input-error"


def test_text_alone_names_its_made_up_inputs(dumped, replay, tmp_path):
    """No snapshot beside the text: random inputs, and the record, the note and the summary say so."""
    bundle, _ = dumped
    dumped_text = next((bundle / "xla_dump").glob("*jit_fn.before_optimizations.txt"))
    alone = tmp_path / "alone"  # beside its snapshot the text would take that snapshot's arguments (issue 29)
    alone.mkdir()
    text = alone / dumped_text.name
    text.write_text(dumped_text.read_text())
    result = replay("replay", str(text), "--seed", "7", "--json", "--out", "out")
    assert result.returncode == 0, result.stderr
    module = _json(result)["modules"][0]
    assert module["input_source"] == {"kind": "random", "seed": 7, "path": None}
    assert any("random inputs (seed 7)" in note for note in module["notes"])
    assert "random (seed 7)" in (bundles(tmp_path / "out")[0] / "summary.txt").read_text()


def test_text_the_target_cannot_parse_shows_the_parsers_whole_message(replay, tmp_path):
    """Not only "Syntax error when trying to parse the text as a HloModule:": the line, column and what it expected."""
    (tmp_path / "newer.hlo").write_text(
        "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] frobnicate(p)\n}\n"
    )
    result = replay("replay", "newer.hlo", "--out", "out")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    shown = result.stdout + result.stderr
    assert "5:19" in shown and "frobnicate" in shown and "expects opcode" in shown, shown
    data = manifest(bundles(tmp_path / "out")[0])
    message = data["modules"][0]["runs"][0]["message"]
    assert data["modules"][0]["outcome"] == "compile-error" and "5:19" in message and "^" in message


def test_unknown_flag_is_refused_before_anything_runs(dumped, replay, tmp_path):
    bundle, _ = dumped
    result = replay("replay", str(bundle), "--xla-flag=--xla_no_such_flag_at_all=1", "--out", "out")
    assert result.returncode == 2 and "does not know XLA flag" in result.stderr
    assert not (tmp_path / "out").exists()


def test_timeout_stops_the_target(dumped, replay, tmp_path):
    bundle, _ = dumped
    # Enough executions to outlast the limit even in a warm replay worker (its jax start-up is paid before the job).
    result = replay(
        "replay",
        str(bundle),
        "--module",
        "jit_fn",
        "--timeout",
        "0.2",
        "--iterations",
        "1000000",
        "--json",
        "--out",
        "out",
    )
    assert result.returncode == 124, result.stderr
    assert _json(result)["modules"][0]["outcome"] == "timeout"
    assert manifest(bundles(tmp_path / "out")[0])["status"] == "timeout"


def test_ctrl_c_stops_the_target_and_completes_the_bundle(dumped, tmp_path, replay_env):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import sigint_default

    bundle, _ = dumped
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlatools", "replay", str(bundle), "--out", "out"],
        cwd=tmp_path,
        env={**os.environ, **replay_env, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    assert proc.stderr.readline().startswith("==> ")  # the first target process is starting
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    data = manifest(bundles(tmp_path / "out")[0])
    assert data["status"] == "interrupted" and data["files"] is not None


def test_dry_run_prints_the_plan_and_runs_nothing(dumped, replay, tmp_path, old_jax_python):
    bundle, _ = dumped
    result = replay(
        "replay",
        str(bundle),
        "--dry-run",
        "--json",
        "--no-opt",
        "--disable-pass",
        "algsimp",
        "--reference-python",
        old_jax_python,
        "--out",
        "out",
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    test, reference = plan["runs"]
    assert "--xla_backend_optimization_level=0" in test["xla_flags"] and reference["python"] == old_jax_python
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def unoptimized_dump(tmp_path_factory, replay_env):
    """A dump with an unoptimised snapshot (--xla_dump_hlo_unoptimized_snapshots, jaxlib >= 0.5)."""
    import os
    import subprocess
    import sys
    from importlib.metadata import version

    if version("jaxlib").startswith("0.4."):
        pytest.skip("jaxlib 0.4.x writes no unoptimised snapshots")
    work = tmp_path_factory.mktemp("unoptimized")
    program = (
        "import jax, jax.numpy as jnp, numpy as np\n"
        "jax.jit(lambda x, y: jnp.tanh(x) @ y)(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))\n"
    )
    env = {
        **os.environ,
        **replay_env,
        "XLA_FLAGS": f"--xla_dump_to={work / 'dump'} --xla_dump_hlo_unoptimized_snapshots",
    }
    subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=300)
    return work / "dump"


def test_unoptimized_snapshot_replays_here_and_on_an_old_jaxlib(unoptimized_dump, replay, old_jax_python):
    snapshot = next(unoptimized_dump.glob("*.hlo_unoptimized_snapshot.pb"))
    result = replay("replay", str(snapshot), "--reference-python", old_jax_python, "--json", "--out", "out")
    assert result.returncode == 0, result.stderr
    module = _json(result)["modules"][0]
    assert module["outcome"] == "ok" and module["comparisons"][0]["against"] == "reference-jax-0.4.30"
    # 0.4.30 cannot read a new jaxlib's proto (ids > INT_MAX): it reads the test run's text of the module
    assert module["runs"][1]["loaded_from"]["path"].endswith("test/module.txt")


def test_modules_share_long_lived_workers_and_a_crash_costs_only_its_worker(dumped, replay, tmp_path):
    """One worker per (interpreter, platform, flags) serves every module; a module that kills it is replayed
    again alone (crash capture, its native backtrace) and the next module gets a fresh worker."""
    bundle, _ = dumped
    result = replay(
        "replay", str(bundle), "--out", "out", "--json", env={"XLATOOLS_REPLAY_INJECT_ABORT": "compile:jit_fn"}
    )
    assert result.returncode == 1, result.stderr
    modules = _by_name(_json(result))
    crashed = modules["jit_fn"]["runs"][0]
    assert (crashed["failure"], crashed["signal"], crashed["phase"]) == ("crash", "SIGABRT", "compile")
    assert crashed["native_backtrace"] and Path(crashed["native_backtrace"]).is_file()
    assert modules["jit_clean"]["outcome"] == "ok"
    logs = sorted(p.name for p in (bundles(tmp_path / "out")[0] / "workers").iterdir())
    assert logs and all(name.endswith(".log") for name in logs), logs


def test_snapshot_picks_which_execution_gives_the_arguments(dumped, replay, tmp_path):
    """--snapshot N: the snapshot of the module's N-th execution (0 the first, -1 the last), in the order the dump
    wrote them; one the dump does not hold is bad input (exit 2) naming what it holds."""
    import os
    import shutil

    bundle, _ = dumped
    shutil.copytree(bundle / "xla_dump", tmp_path / "dump")
    [first] = (tmp_path / "dump").glob("*jit_fn*.snapshot.*.pb")
    stem = first.name.split(".snapshot.")[0]
    second = first.with_name(f"{stem}.snapshot.{'123' if '.snapshot.123.' not in first.name else '456'}.pb")
    # a later execution (with the same values): run ids are not counts, the order is the files' age
    shutil.copyfile(first, second)
    os.utime(second, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 10**9))
    result = replay("replay", "dump", "--module", "jit_fn", "--snapshot", "-1", "--json", "--out", "out")
    assert result.returncode == 0, result.stderr
    module = _json(result)["modules"][0]
    assert module["input_source"]["path"] == str(second) and module["comparisons"][0]["ok"]
    wrong = replay("replay", "dump", "--module", "jit_fn", "--snapshot", "2")
    assert wrong.returncode == 2 and "has snapshots of executions 0 to 1" in wrong.stderr, wrong.stderr
