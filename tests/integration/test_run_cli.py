"""`xlatools run` end to end with real jax on CPU (the CLI as a subprocess)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers import bundles, manifest, sigint_default
from xlatools.proctree import alive


def test_run_dump_smoke_all(xl, tmp_path):
    result = xl("run", "--dump")
    assert result.returncode == 0, result.stderr
    [bundle] = bundles(tmp_path / "artifacts")
    assert (tmp_path / "artifacts" / "latest").resolve() == bundle.resolve()
    data = manifest(bundle)
    assert data["status"] == "ok" and data["exit_code"] == 0
    assert data["schema_version"] == 1 and data["xlatools_version"]
    assert data["jax"]["jaxlib"] and data["jax"]["devices"]
    assert f"--xla_dump_to={bundle}/xla_dump" in data["xla_flags"]
    assert {e["name"] for e in data["env_changes"]} >= {"XLA_FLAGS", "JAX_ENABLE_COMPILATION_CACHE"}
    assert any("compilation cache disabled" in n for n in data["notes"])
    assert [r["ok"] for r in data["smoke"]["results"]] == [True] * 7
    assert data["smoke"]["results"][-1]["devices"] == 4  # collectives over 4 CPU devices
    for name in ("stdout.log", "stderr.log", "summary.txt", "program/main.py", "program/programs.py"):
        assert (bundle / name).is_file(), name
    indexed = {f["path"]: f for f in data["files"]}
    assert "stdout.log" in indexed and len(indexed["stdout.log"]["sha256"]) == 64
    assert any(p.startswith("xla_dump/module_0000.jit_f.before_optimizations") for p in indexed)
    assert "smoke:collectives ok" in (bundle / "stdout.log").read_text()
    assert "smoke:dot ok" in result.stdout  # live on the terminal too
    # The module table at the end, and in the summary.
    assert "instr before" in result.stderr and "jit_f" in result.stderr
    assert "jit_matmul" in (bundle / "summary.txt").read_text()
    assert data["dump"]["modules"] and data["dump"]["modules"][0]["instructions_before"] > 0


def test_full_ir_compiles_and_pass_log_presets(xl, tmp_path):
    result = xl(
        "run",
        "smoke:dot",
        "--preset",
        "full",
        "--preset",
        "ir",
        "--preset",
        "compiles",
        "--preset",
        "log:passes",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # stdout holds only the JSON
    bundle = tmp_path / "artifacts" / "latest"
    dump = bundle / "xla_dump"
    names = os.listdir(dump)
    assert any(".after_" in n and n.endswith(".txt") for n in names), "per-pass text"
    assert any(n.endswith(".html") for n in names), "html"
    assert any(".snapshot." in n for n in names), "snapshots"
    assert any(n.endswith(".mlir") for n in os.listdir(bundle / "jax_ir")), "JAX_DUMP_IR_TO"
    stderr_log = (bundle / "stderr.log").read_text()
    assert "Compiling jit(f)" in stderr_log or "Compiling f" in stderr_log, "JAX_LOG_COMPILES"
    assert "hlo_pass_pipeline.cc" in stderr_log and "HLO pass" in stderr_log, "pass pipeline VLOG"
    assert summary["status"] == "ok" and summary["dump"]["modules"][0]["pass_steps"] > 5
    assert [p["name"] for p in summary["presets"]] == ["full", "ir", "compiles", "passes"]

    inspected = xl("inspect", str(bundle), "--module", "jit_f")
    assert inspected.returncode == 0, inspected.stderr
    assert "pipeline-start" in inspected.stdout and "yes" in inspected.stdout
    data = json.loads(xl("inspect", "artifacts/latest", "--json").stdout)
    assert data["modules"][0]["name"] == "jit_f" and "passes" in data["modules"][0]["stages"]


@pytest.mark.parametrize(
    "preset,expect",
    [
        ("proto", lambda names: any(n.endswith("before_optimizations.hlo.pb") for n in names)),
        ("html", lambda names: any(n.endswith(".html") for n in names)),
        ("snapshots", lambda names: any(".snapshot." in n for n in names)),
        ("llvm", lambda names: any(n.endswith((".ll", ".mlir")) for n in names)),
        ("fusion", lambda names: any(n.endswith("before_optimizations.txt") for n in names)),
    ],
)
def test_dump_presets_write_their_files(xl, tmp_path, preset, expect):
    result = xl("run", "smoke:dot", "--preset", f"dump:{preset}")
    assert result.returncode == 0, result.stderr
    names = os.listdir(tmp_path / "artifacts" / "latest" / "xla_dump")
    assert expect(names), names


def test_log_and_jax_presets_reach_the_program(xl, tmp_path):
    script = tmp_path / "show_env.py"
    script.write_text(
        "import os, json, jax\n"
        "jax.jit(lambda x: x * 2)(1.0)\n"
        "print(json.dumps({k: os.environ.get(k) for k in ('TF_CPP_MIN_LOG_LEVEL', 'TF_CPP_MAX_VLOG_LEVEL', "
        "'JAX_DISABLE_MOST_OPTIMIZATIONS', 'JAX_TRACEBACK_FILTERING', 'TF_XLA_FLAGS', 'TF_DUMP_GRAPH_PREFIX', "
        "'XLA_IR_DEBUG', 'XLA_HLO_DEBUG')}))\n"
    )
    result = xl(
        "run",
        "show_env.py",
        "--preset",
        "vlog1",
        "--preset",
        "no-opt",
        "--preset",
        "tracebacks",
        "--preset",
        "tf-clustering",
        "--preset",
        "torch-xla",
        "--frontend",  # the frontend presets ask for their own frontends: here they only set variables jax ignores
        "jax",
    )
    assert result.returncode == 0, result.stderr
    bundle = (tmp_path / "artifacts" / "latest").resolve()
    # VLOG 1 makes the run quiet by default: the program's output is in the bundle, not the terminal.
    assert result.stdout == "" and "quiet" in result.stderr
    seen = json.loads((bundle / "stdout.log").read_text().strip().splitlines()[-1])
    assert seen == {
        "TF_CPP_MIN_LOG_LEVEL": "0",
        "TF_CPP_MAX_VLOG_LEVEL": "1",
        "JAX_DISABLE_MOST_OPTIMIZATIONS": "1",
        "JAX_TRACEBACK_FILTERING": "off",
        "TF_XLA_FLAGS": "--tf_xla_clustering_debug",
        "TF_DUMP_GRAPH_PREFIX": f"{bundle}/tf_graphs",
        "XLA_IR_DEBUG": "1",
        "XLA_HLO_DEBUG": "1",
    }
    assert (bundle / "stderr.log").read_text().count("\n") > 300, "VLOG 1 lines"
    assert (bundle / "program" / "show_env.py").is_file()
    assert manifest(bundle)["dump"] is None


def test_a_frontend_preset_selects_its_frontend(xl, tmp_path):
    """`--preset tf-clustering` runs the program as TensorFlow's: a target without TensorFlow is exit 3 before any
    bundle (not a jax run that fails on `import tensorflow`); presets of two frontends need --frontend (exit 2)."""
    (tmp_path / "tfprog.py").write_text("import tensorflow\n")
    result = xl("run", "tfprog.py", "--preset", "tf-clustering")
    assert result.returncode == 3, result.stderr
    assert "--preset tf-clustering is for tensorflow programs" in result.stderr and "has no tensorflow" in result.stderr
    assert not (tmp_path / "artifacts").exists()
    result = xl("run", "tfprog.py", "--preset", "tf-clustering", "--preset", "torch-xla", "--dry-run")
    assert result.returncode == 2 and "--frontend" in result.stderr, result.stderr


def test_info_preset_and_vmodule_option(xl, tmp_path):
    result = xl("run", "smoke:dot", "--preset", "info")
    assert result.returncode == 0, result.stderr
    log = (tmp_path / "artifacts" / "latest" / "stderr.log").read_text()
    assert re.search(r"^I\d{4} ", log, re.M), "absl INFO lines"
    assert "hlo_pass_pipeline.cc" not in log
    result = xl("run", "smoke:dot", "--vmodule", "hlo_pass_pipeline=1")
    assert result.returncode == 0, result.stderr
    log = (tmp_path / "artifacts" / "latest" / "stderr.log").read_text()
    assert "hlo_pass_pipeline.cc" in log  # --vmodule alone also unhides INFO


@pytest.mark.parametrize(
    "args,message",
    [
        (["--preset", "nope"], "unknown preset 'nope'"),
        (["--preset", "passes"], "ambiguous"),
        (["--xla-flag=--xla_bogus_flag"], "does not know XLA flag --xla_bogus_flag (from --xla-flag)"),
        (["missing.py"], "program not found: missing.py"),
        (["--python", "/nonexistent/python"], "--python /nonexistent/python: no such file"),
        (["--env", "NOEQUALS"], "expected KEY=VALUE"),
        (["--platform", "tpu"], "expected auto, cpu or gpu"),
    ],
)
def test_bad_input_exits_2_without_bundle(xl, tmp_path, args, message):
    result = xl("run", *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not bundles(tmp_path / "artifacts")


def test_gpu_platform_without_gpu_exits_3(xl, tmp_path):
    result = xl("run", "smoke:dot", "--platform", "gpu", env={"JAX_PLATFORMS": ""})
    assert result.returncode == 3, result.stderr
    assert "sees no GPU" in result.stderr and not bundles(tmp_path / "artifacts")


def test_interpreter_without_jax_exits_3(xl, tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    result = xl("run", "--python", str(bare / "bin" / "python"))
    assert result.returncode == 3, result.stderr
    assert "has no jax and jaxlib" in result.stderr


def test_program_status_timeout_and_mismatch(xl, tmp_path):
    (tmp_path / "fails.py").write_text("import sys; print('bye'); sys.exit(5)\n")
    result = xl("run", "fails.py")
    assert result.returncode == 1 and "program exit 5" in result.stderr
    data = manifest(tmp_path / "artifacts" / "latest")
    assert (data["status"], data["exit_code"], data["returncode"], data["program_outcome"]) == (
        "failed",
        1,
        5,
        "exit 5",
    )

    (tmp_path / "slow.py").write_text("import time; print('start', flush=True); time.sleep(300)\n")
    result = xl("run", "slow.py", "--timeout", "2", "--name", "slow")
    assert result.returncode == 124
    data = manifest(tmp_path / "artifacts" / "latest")
    assert data["status"] == "timeout" and data["name"] == "slow"
    assert (tmp_path / "artifacts" / "latest" / "stdout.log").read_text() == "start\n"

    result = xl("run", "smoke:dot", env={"XLATOOLS_SMOKE_INJECT_MISMATCH": "dot"})
    assert result.returncode == 1
    assert "smoke:dot FAILED: max abs error" in result.stdout


def test_ctrl_c_ends_the_tree_and_marks_interrupted(tmp_path, probe_cache, jax_python):
    (tmp_path / "tree.py").write_text(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "open('pids.txt', 'w').write(str(child.pid))\n"
        "print('ready', flush=True)\n"
        "time.sleep(300)\n"
    )
    env = {**os.environ, "XLATOOLS_CACHE_DIR": str(probe_cache), "NO_COLOR": "1"}
    # Its own session, as a terminal would make it a foreground job: SIGINT goes to xlatools only.
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlatools", "run", "tree.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=sigint_default,
    )
    try:
        assert proc.stdout.readline() == b"ready\n"
        child = int((tmp_path / "pids.txt").read_text())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    data = manifest(tmp_path / "artifacts" / "latest")
    assert data["status"] == "interrupted" and data["exit_code"] == 130
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child), "the program's child survived Ctrl-C"


def test_two_parallel_runs_make_two_complete_bundles(tmp_path, probe_cache, jax_python):
    env = {**os.environ, "XLATOOLS_CACHE_DIR": str(probe_cache), "NO_COLOR": "1", "JAX_PLATFORMS": "cpu"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "xlatools", "run", "smoke:dot", "--dump", "--name", "par"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    found = bundles(tmp_path / "artifacts")
    assert len(found) == 2
    for bundle in found:
        data = manifest(bundle)
        assert data["status"] == "ok"
        assert any(f["path"].startswith("xla_dump/") for f in data["files"])
        assert all(str(bundle) in flag for flag in data["xla_flags"] if flag.startswith("--xla_dump_to"))


def test_secrets_are_redacted(xl, tmp_path):
    result = xl(
        "run",
        "smoke:dot",
        "--env",
        "MY_API_TOKEN=hunter2",
        "--env",
        "AWS_SECRET_ACCESS_KEY=s3cr3t",
        "--env",
        "PLAIN=visible",
        env={"MY_API_TOKEN": "old-secret"},
    )
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "artifacts" / "latest" / "manifest.json").read_text()
    for secret in ("hunter2", "s3cr3t", "old-secret"):
        assert secret not in text
    changes = {e["name"]: e for e in manifest(tmp_path / "artifacts" / "latest")["env_changes"]}
    assert changes["MY_API_TOKEN"]["value"] == "***redacted***" and changes["PLAIN"]["value"] == "visible"


def test_dry_run_writes_nothing_and_archive(xl, tmp_path):
    result = xl("run", "--dump", "--dry-run", "--xla-flag=--xla_dump_hlo_pass_re=.*")
    assert result.returncode == 0, result.stderr
    assert "--xla_dump_hlo_pass_re=.*" in result.stdout and "{bundle}/xla_dump" in result.stdout
    assert not (tmp_path / "artifacts").exists()
    plan = json.loads(xl("run", "--dump", "--dry-run", "--json", "--env", "A_TOKEN=hunter2").stdout)["plan"]
    assert plan["dump_dir"] == "{bundle}/xla_dump"
    assert "hunter2" not in json.dumps(plan)

    result = xl("run", "smoke:reduce", "--archive", "--json", "--out", "out")
    assert result.returncode == 0, result.stderr
    archive = json.loads(result.stdout)["archive"]
    assert archive.endswith(".tar.gz") and os.path.getsize(archive) > 0


def test_module_program_and_profile(xl, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "job.py").write_text(
        "import sys, jax\nprint('args', sys.argv[1:], jax.jit(lambda x: x + 1)(1))\n"
    )
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "mine.yaml").write_text(
        "description: test\nrun:\n  dump_preset: passes\n  presets: [team]\n  env: {PLAIN: from-profile}\n"
        "  define_presets:\n    team: {kind: jax, env: {JAX_TRACEBACK_FILTERING: 'off'}}\n"
    )
    result = xl("run", "--profile", "mine", "--dump", "-m", "pkg.job", "--", "a", "--b")
    assert result.returncode == 0, result.stderr
    assert "args ['a', '--b'] 2" in result.stdout
    data = manifest(tmp_path / "artifacts" / "latest")
    assert [p["name"] for p in data["presets"]] == ["team", "passes"]
    assert data["profile"]["name"] == "mine" and data["profile"]["chain"] == ["mine"]
    assert data["profile"]["resolved"]["run"]["dump_preset"] == "passes"
    assert any(p["key"] == "run.env.PLAIN" for p in data["profile"]["provenance"])
    assert data["dump"]["modules"][0]["pass_steps"] > 0
