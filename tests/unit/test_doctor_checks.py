"""Each doctor check as a function: facts, environments and trees built in the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlatools.doctor import checks_build as b
from xlatools.doctor import checks_env as e
from xlatools.doctor import checks_native as n
from xlatools.doctor import checks_target as t
from xlatools.doctor.model import Check, DoctorOptions, Report
from xlatools.doctor.runner import plan_doctor
from xlatools.errors import EnvironmentMissing
from xlatools.run.flags import check_flag_value
from xlatools.run.target import ProbedInterpreter


def facts(**kw) -> ProbedInterpreter:
    """The probe's answer about a target (plugins given as distribution -> version)."""
    base = dict(
        python="/venv/bin/python",
        python_version="3.11.7",
        jax="0.10.2",
        jaxlib="0.10.2",
        min_jaxlib="0.10.1",
        jaxlib_origin="/venv/jaxlib/__init__.py",
    )
    plugins = kw.pop("plugins", {})
    return ProbedInterpreter(**{**base, **kw}, plugins=sorted(plugins), plugin_versions=plugins)


@pytest.mark.parametrize(
    "jax, jaxlib, minimum, status",
    [
        ("0.10.2", "0.10.2", "0.10.1", "ok"),
        ("0.10.2", "0.10.1", "0.10.1", "ok"),
        ("0.10.2", "0.4.30", "0.10.1", "fail"),  # older than jax's minimum
        ("0.4.30", "0.10.2", "0.4.27", "fail"),  # newer than jax
        ("0.10.2", "0.10.2.dev0+selfbuilt", "0.10.1", "ok"),  # a self-built jaxlib compares by release
        ("0.10.2", "0.10.2", None, "warn"),
    ],
)
def test_compatibility(jax, jaxlib, minimum, status):
    check = t.check_compatible(facts(jax=jax, jaxlib=jaxlib, min_jaxlib=minimum))
    assert check.status == status, check
    if status == "fail":
        assert f"jax=={jax} jaxlib=={jax}" in check.fix


def test_missing_jaxlib_fails_and_skips_compatibility():
    f = facts(jaxlib=None)
    assert t.check_installed(f).status == "fail" and "no jaxlib" in t.check_installed(f).evidence
    assert t.check_compatible(f).status == "skip"


def test_plugin_version_must_match_jaxlib():
    assert t.check_plugins(facts(plugins={"jax-cuda12-plugin": "0.10.2"})).status == "ok"
    stale = t.check_plugins(facts(plugins={"jax-cuda12-plugin": "0.9.0"}))
    assert stale.status == "fail" and "jax-cuda12-plugin" in stale.evidence


@pytest.mark.parametrize(
    "name, value, problem",
    [
        ("xla_dump_hlo_as_text", None, False),
        ("xla_dump_hlo_as_text", "TRUE", False),
        ("xla_dump_hlo_as_text", "0", False),
        ("xla_dump_hlo_as_text", "yes", True),
        ("xla_dump_max_hlo_modules", "12", False),
        ("xla_dump_max_hlo_modules", "abc", True),
        ("xla_dump_max_hlo_modules", None, True),
        ("xla_gpu_autotune_gemm_rtol", "0.1", False),
        ("xla_gpu_autotune_gemm_rtol", "x", True),
        ("xla_dump_hlo_pass_re", ".*", False),
        ("xla_dump_hlo_pass_re", "(", True),
        ("xla_cpu_max_isa", "avx2", False),
        ("xla_cpu_max_isa", "AVX9", True),
        ("xla_disable_hlo_passes", "a,b", False),
        ("xla_disable_hlo_passes", "a,,b", True),
        ("xla_dump_to", "-", False),
        ("xla_some_unknown_flag", "anything", False),
    ],
)
def test_check_flag_value(name, value, problem):
    assert (check_flag_value(name, value) is not None) == problem


def test_flag_value_path_must_be_creatable(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert check_flag_value("xla_dump_to", str(tmp_path / "new" / "dir")) is None
    if not __import__("os").access(locked, __import__("os").W_OK):  # root writes anywhere
        assert "not writable" in check_flag_value("xla_dump_to", str(locked / "dumps"))


def test_xla_flags_unknown_badly_typed_and_tpu():
    asked = {}

    def unknown(flags):
        asked.update(flags)
        return ["xla_bogus"]

    env = {"XLA_FLAGS": "--xla_dump_to=/tmp/d --xla_dump_max_hlo_modules=abc --xla_bogus=1 --xla_tpu_foo=true"}
    check = e.check_xla_flags(env, unknown)
    assert check.status == "fail"
    assert "expects a whole number" in check.evidence and "--xla_bogus is unknown" in check.evidence
    assert "move --xla_tpu_foo from XLA_FLAGS to LIBTPU_INIT_ARGS" in check.fix
    assert "xla_tpu_foo" not in asked and "xla_dump_to" in asked  # TPU flags are not asked of jaxlib


def test_xla_flags_fine_unset_file_and_unanswerable():
    assert e.check_xla_flags({"XLA_FLAGS": "--xla_dump_to=/tmp/d"}, lambda f: []).status == "ok"
    assert e.check_xla_flags({}, lambda f: []).evidence == "not set"
    assert e.check_xla_flags({"XLA_FLAGS": "/etc/flags.txt"}, lambda f: []).status == "warn"

    def broken(flags):
        raise EnvironmentMissing("probe failed")

    check = e.check_xla_flags({"XLA_FLAGS": "--xla_dump_to=/tmp/d"}, broken)
    assert check.status == "warn" and "could not ask" in check.evidence


def test_tf_cpp_vlog_hidden_by_min_log_level():
    assert e.check_tf_cpp({"TF_CPP_MAX_VLOG_LEVEL": "1"}).status == "warn"
    assert e.check_tf_cpp({"TF_CPP_VMODULE": "cpu_compiler=2", "TF_CPP_MIN_LOG_LEVEL": "1"}).status == "warn"
    assert e.check_tf_cpp({"TF_CPP_MAX_VLOG_LEVEL": "1", "TF_CPP_MIN_LOG_LEVEL": "0"}).status == "ok"
    assert e.check_tf_cpp({"TF_CPP_MIN_LOG_LEVEL": "3"}).status == "warn"
    assert e.check_tf_cpp({}).status == "ok"


def test_compilation_cache_platforms_visible_devices_ld():
    assert e.check_compilation_cache({"JAX_COMPILATION_CACHE_DIR": "/c"}).status == "warn"
    assert (
        e.check_compilation_cache({"JAX_COMPILATION_CACHE_DIR": "/c", "JAX_ENABLE_COMPILATION_CACHE": "false"}).status
        == "ok"
    )
    cuda = {"jax-cuda12-plugin": "0.10.2"}
    assert e.check_platforms({"JAX_PLATFORMS": "cpu"}, cuda).status == "warn"
    assert e.check_platforms({"JAX_PLATFORMS": "cpu"}, {}).status == "ok"
    assert e.check_visible_devices({"CUDA_VISIBLE_DEVICES": ""}, cuda).status == "warn"
    assert e.check_visible_devices({"CUDA_VISIBLE_DEVICES": "0,1"}, cuda).status == "ok"
    assert e.check_loader_env({"LD_PRELOAD": "/nonexistent/libx.so"}).status == "fail"
    assert e.check_libtpu_args({"LIBTPU_INIT_ARGS": "--xla_tpu_foo=1"}, has_libtpu=False).status == "warn"


def test_gpu_driver_and_libraries_with_given_facts():
    cuda = {"jax-cuda12-plugin": "0.10.2"}
    assert n.check_gpu_driver({}, None).status == "skip"
    assert n.check_gpu_driver(cuda, None).status == "fail"
    assert n.check_gpu_driver(cuda, "470.57.02").status == "fail"
    assert n.check_gpu_driver(cuda, "550.54.15").status == "ok"
    assert n.check_gpu_driver({"jax-cuda13-plugin": "0.12.0"}, "550.54.15").status == "fail"
    libs = {"nvidia-cudnn-cu12": "9.8.0", "nvidia-nccl-cu12": "2.27.7"}
    assert n.check_cuda_libs(cuda, libs, {}).status == "ok"
    missing = n.check_cuda_libs(cuda, {"nvidia-cudnn-cu12": "9.8.0"}, {"libnccl.so.2": None})
    assert missing.status == "fail" and "nccl" in missing.evidence


def test_driver_version_from_proc_text(tmp_path):
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n")
    assert n.driver_version(str(proc)) == "550.54.15"
    assert n.driver_version(str(tmp_path / "none")) is None


def tree(tmp_path: Path, bazelrc: str, bazelversion: str | None = None) -> Path:
    root = tmp_path / "jax"
    root.mkdir()
    (root / ".bazelrc").write_text(bazelrc)
    if bazelversion:
        (root / ".bazelversion").write_text(bazelversion + "\n")
    return root


JAXLIKE_RC = "build:cuda --repo_env=X=1\ncommon:debug_symbols --strip=never\ntry-import %workspace%/.bazelrc.user\n"


def test_bazel_version_against_the_tree(tmp_path):
    root = tree(tmp_path, JAXLIKE_RC, "7.7.0")
    bazel = {"bazel": "/usr/bin/bazel", "bazelisk": None}
    assert b.check_bazel(root, bazel, "7.7.0").status == "ok"
    wrong = b.check_bazel(root, bazel, "4.2.3")
    assert wrong.status == "fail" and "asks for 7.7.0" in wrong.evidence
    assert b.check_bazel(root, {"bazel": None, "bazelisk": "/usr/bin/bazelisk"}, None).status == "ok"
    assert b.check_bazel(root, {"bazel": None, "bazelisk": None}, None).status == "warn"
    assert b.check_bazel(root, bazel, None).status == "warn"


def test_bazelrc_import_and_configs(tmp_path):
    root = tree(tmp_path, JAXLIKE_RC)
    assert b.check_bazelrc_imports_user(root).status == "ok"
    (root / ".bazelrc").write_text("build:cuda --x\n")
    assert b.check_bazelrc_imports_user(root).status == "fail"
    (root / ".bazelrc").write_text("import %workspace%/more.bazelrc\n")
    (root / "more.bazelrc").write_text("build:debug_symbols --strip=never\n")
    assert b.check_profile_configs(root, ["debug_symbols"]).status == "ok"
    missing = b.check_profile_configs(root, ["debug_symbols", "dbg"])
    assert missing.status == "fail" and "--config=dbg" in missing.evidence


def test_cuda_profile_needs_the_cuda_config(tmp_path):
    from xlatools.profiles import load

    cuda = load("dbg-cuda").profile
    root = tree(tmp_path, JAXLIKE_RC)
    assert b.check_cuda_config(cuda, root).status == "ok"
    jaxlib_only = cuda.model_copy(update={"build": cuda.build.model_copy(update={"wheels": ["jaxlib"]})})
    assert b.check_cuda_config(jaxlib_only, root).status == "fail"
    (root / ".bazelrc").write_text("try-import %workspace%/.bazelrc.user\n")
    assert b.check_cuda_config(cuda, root).status == "fail"
    assert b.check_cuda_config(load("dbg-cpu").profile, root).status == "skip"


def test_disk_thresholds(tmp_path):
    assert b.check_disk("dumps", tmp_path / "a" / "b", warn_gib=0, fail_gib=0).status == "ok"
    assert b.check_disk("dumps", tmp_path, warn_gib=1e9, fail_gib=0).status == "warn"
    assert b.check_disk("dumps", tmp_path, warn_gib=1e9, fail_gib=1e9).status == "fail"


def test_docker_socket_missing_and_dead(tmp_path):
    import socket

    missing = b.docker_socket_problem({"DOCKER_HOST": f"unix://{tmp_path}/none.sock"})
    assert missing.status == "fail" and "no Docker socket" in missing.evidence
    dead = tmp_path / "dead.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(dead))
    server.close()  # the file stays, nobody listens
    assert b.docker_socket_problem({"DOCKER_HOST": f"unix://{dead}"}) is None
    assert b.docker_socket_problem({"DOCKER_HOST": "tcp://127.0.0.1:1"}) is None


def test_report_exit_codes_and_plan():
    fine = [Check("a", "ok", "x"), Check("b", "skip", "y")]
    assert Report(fine).exit_code == 0
    assert Report(fine + [Check("c", "warn", "z", "f")]).exit_code == 0
    assert Report(fine + [Check("c", "warn", "z", "f")], strict=True).exit_code == 1
    assert Report(fine + [Check("c", "fail", "z", "f")]).exit_code == 1
    assert plan_doctor(DoctorOptions(), "/py").sections == ("target", "env", "native", "gpu", "disk")
    assert "tree" in plan_doctor(DoctorOptions(source=Path("/src")), "/py").sections
    assert "build" in plan_doctor(DoctorOptions(profile="dbg-cpu"), "/py").sections


def test_evidence_of_several_lines_stays_in_its_column():
    """A tool's message of several lines (sinfo, sbatch) is not printed at column 0: each line under the first."""
    from xlatools.doctor.model import fail, ok
    from xlatools.doctor.render import report_lines

    lines = report_lines(
        Report(
            [
                ok("slurm client", "sbatch at /usr/bin/sbatch"),
                fail(
                    "slurm controller",
                    "sinfo: error: resolve_ctls_from_dns_srv: res_nsearch error\n"
                    "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n",
                    "check that slurmctld runs and SLURM_CONF names it",
                ),
            ]
        )
    )
    assert lines[1] == "FAIL  slurm controller  sinfo: error: resolve_ctls_from_dns_srv: res_nsearch error"
    assert lines[2] == " " * 24 + "slurm_load_partitions: Unable to contact slurm controller (connect failure)"
    assert lines[3] == " " * 24 + "fix: check that slurmctld runs and SLURM_CONF names it"
    assert all(line.startswith(("ok", "FAIL", " ", "doctor:")) for line in lines)
