"""`xlatools doctor` and `xlatools explain` as a user runs them, each against a real situation."""

from __future__ import annotations

import json
import os
import shutil
import socket

import pytest
from tests.helpers import REPO, manifest


def checks(proc) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


def test_healthy_target(xl):
    first = xl("doctor", "--json")
    assert first.returncode == 0, first.stdout + first.stderr
    found = checks(first)
    assert found["jax/jaxlib versions"]["status"] == "ok"
    assert found["devices"]["status"] == "ok" and "cpu" in found["devices"]["evidence"]
    assert found["native libraries"]["status"] == "ok" and "libstdc++.so.6" in found["native libraries"]["evidence"]
    assert {c["status"] for c in found.values()} <= {"ok", "skip"}
    again = xl("doctor")  # the probe is cached now: no probing line
    assert again.returncode == 0 and "probing" not in again.stderr
    assert "doctor:" in again.stdout and "no problem found" in again.stdout
    assert "remembered from an earlier probe" in again.stdout


def test_xla_flags_unknown_flag_and_badly_typed_value(xl):
    proc = xl("doctor", "--json", env={"XLA_FLAGS": "--xla_dump_max_hlo_modules=abc --xla_no_such_flag=1"})
    assert proc.returncode == 1, proc.stderr
    flags = checks(proc)["env XLA_FLAGS"]
    assert flags["status"] == "fail"
    assert "--xla_dump_max_hlo_modules=abc: expects a whole number" in flags["evidence"]
    assert "--xla_no_such_flag is unknown to this jaxlib" in flags["evidence"]


def test_compilation_cache_is_a_warning_unless_strict(xl, tmp_path):
    env = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache")}
    proc = xl("doctor", "--json", env=env)
    assert proc.returncode == 0
    cache = checks(proc)["env JAX compilation cache"]
    assert cache["status"] == "warn" and "dumps" in cache["evidence"] and cache["fix"]
    strict = xl("doctor", "--strict", env=env)
    assert strict.returncode == 1 and "WARN" in strict.stdout and "--strict" in strict.stdout


def test_old_libstdcxx_on_ld_library_path(xl, old_libstdcxx):
    proc = xl("doctor", "--json", env={"LD_LIBRARY_PATH": str(old_libstdcxx)})
    assert proc.returncode == 1
    native = checks(proc)["native libstdc++.so.6"]
    assert native["status"] == "fail"
    assert f"{old_libstdcxx}/libstdc++.so.6 (via LD_LIBRARY_PATH) provides up to GLIBCXX_3.4.20" in native["evidence"]
    assert str(old_libstdcxx) in native["fix"]


def test_mismatched_jax_and_jaxlib(xl, mismatched_python):
    proc = xl("doctor", "--python", mismatched_python, "--json")
    assert proc.returncode == 1, proc.stderr
    found = checks(proc)
    versions = found["jax/jaxlib versions"]
    assert versions["status"] == "fail" and "jax needs jaxlib >= 0.10.1" in versions["evidence"]
    assert "jax==0.10.2 jaxlib==0.10.2" in versions["fix"]
    assert found["devices"]["status"] == "skip"


def test_docker_unreachable(xl, tmp_path):
    dead = tmp_path / "dead.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(dead))
    server.close()  # the socket file stays; nobody answers
    proc = xl("doctor", "--profile", "dbg-cpu", "--json", env={"DOCKER_HOST": f"unix://{dead}"})
    assert proc.returncode == 1
    docker = checks(proc)["docker engine"]
    assert docker["status"] == "fail" and str(dead) in docker["evidence"] and "--local" in docker["fix"]
    assert "build image" not in checks(proc)


@pytest.mark.bazel
def test_tree_with_a_wrong_bazelversion(xl, tmp_path, bazel_bin):
    tree = tmp_path / "jax"
    shutil.copytree(REPO / "tests" / "fixtures" / "jaxlike", tree)
    (tree / ".bazelversion").write_text("99.0.0\n")
    proc = xl(
        "doctor",
        "--source",
        str(tree),
        "--profile",
        "dbg-cpu",
        "--json",
        env={"PATH": f"{os.path.dirname(bazel_bin)}:/usr/bin:/bin"},
    )  # that bazel, no bazelisk
    found = checks(proc)
    bazel = found["bazel version"]
    assert bazel["status"] == "fail" and "asks for 99.0.0" in bazel["evidence"], bazel
    assert found[".bazelrc imports .bazelrc.user"]["status"] == "ok"
    assert proc.returncode == 1


def test_bad_input(xl, tmp_path):
    assert xl("doctor", "--python", str(tmp_path / "nope")).returncode == 2
    missing_profile = xl("doctor", "--profile", "no-such-profile")
    assert missing_profile.returncode == 2 and "Traceback" not in missing_profile.stderr
    assert xl("explain", str(tmp_path / "none.log")).returncode == 2
    assert xl("doctor", "--source", str(tmp_path / "no-tree")).returncode == 2
    assert xl("doctor", "--python", "/bin/true").returncode == 3  # runs, but is no Python


def test_explain_a_log(xl, tmp_path):
    log = tmp_path / "build.log"
    log.write_text(
        "INFO: Analyzed 12 targets\n"
        "external/xla/xla/service/gpu/nccl_api.cc:38:10: fatal error: third_party/nccl/nccl.h: "
        "No such file or directory\nFAILED: Build did NOT complete successfully\n"
    )
    text = xl("explain", str(log))
    assert text.returncode == 1
    assert "[nccl-header-missing] line 2" in text.stdout and "--config=cuda" in text.stdout
    data = json.loads(xl("explain", str(log), "--json").stdout)
    assert [h["id"] for h in data["hints"]] == ["nccl-header-missing"]
    log.write_text("INFO: Build completed successfully\n")
    clean = xl("explain", str(log))
    assert clean.returncode == 0 and "no known failure signature" in clean.stdout


def test_failed_build_explains_itself(xl, tmp_path):
    """A local build whose command fails like an out-of-memory compiler: hints printed and in the manifest."""
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / ".bazelrc").write_text("try-import %workspace%/.bazelrc.user\n")
    profile = tmp_path / "oom.yaml"
    profile.write_text(
        "extends: base\nbuild:\n  command: [sh, -c, "
        "\"echo 'gcc: fatal error: Killed signal terminated program cc1plus'; exit 1\"]\n"
    )
    out = tmp_path / "out"
    proc = xl("build", "--profile", str(profile), "--source", str(tree), "--local", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "[compiler-killed-oom]" in proc.stderr and "--jobs" in proc.stderr
    bundle = (out / "latest").resolve()
    hints = manifest(bundle)["hints"]
    assert [h["id"] for h in hints] == ["compiler-killed-oom"] and hints[0]["line_number"] >= 1
    again = xl("explain", str(bundle))  # a bundle directory means its build.log
    assert again.returncode == 1 and "compiler-killed-oom" in again.stdout


def test_the_profiles_run_frontend_is_checked_against_the_target(xl, tmp_path):
    (tmp_path / "tfrun.yaml").write_text("extends: base\nrun:\n  frontend: tensorflow\n")
    (tmp_path / "jaxrun.yaml").write_text("extends: base\nrun:\n  frontend: jax\n")
    wrong = xl(
        "doctor", "--profile", str(tmp_path / "tfrun.yaml"), "--json", env={"DOCKER_HOST": "unix:///nonexistent"}
    )
    found = checks(wrong)["run.frontend"]
    assert wrong.returncode == 1 and found["status"] == "fail"
    assert "runs tensorflow, which the target cannot start" in found["evidence"] and "run.frontend" in found["fix"]
    right = checks(
        xl("doctor", "--profile", str(tmp_path / "jaxrun.yaml"), "--json", env={"DOCKER_HOST": "unix:///nonexistent"})
    )["run.frontend"]
    assert right["status"] == "ok" and "jax (jaxlib " in right["evidence"]


def test_a_target_whose_jax_dies_at_start_still_gets_its_facts_checked(xl, tmp_path, jax_python):
    """The probe writes the facts before it starts jax: a jax that kills the process at start (here
    XLA aborting on an unknown flag that the interpreter's own wrapper sets) leaves a report whose
    version and library checks ran, and a failed devices check saying how jax died."""
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nXLA_FLAGS=--xla_no_such_flag_at_all exec {jax_python} "$@"\n')
    wrapper.chmod(0o755)
    proc = xl("doctor", "--python", str(wrapper), "--json")
    assert proc.returncode == 1, proc.stderr
    found = checks(proc)
    assert found["jax/jaxlib versions"]["status"] == "ok" and found["native libraries"]["status"] == "ok"
    devices = found["devices"]
    assert devices["status"] == "fail" and "starting jax killed the probe (exit" in devices["evidence"], devices
    run = xl("run", "smoke:dot", "--python", str(wrapper))
    assert run.returncode == 3 and "the probe failed (exit" in run.stderr, run.stderr
