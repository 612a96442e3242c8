"""Build plans (pure): golden plans for every shipped profile, option names
checked against JAX's build/build.py options, templates, images, mounts."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from xlatools.bazelrc import render
from xlatools.builder.command import CommandInputs, expand_template
from xlatools.builder.image import content_hash
from xlatools.builder.plan import C_CA_BUNDLE, C_XLA, BuildOptions, plan_build, profile_for_tree
from xlatools.errors import UsageError
from xlatools.profiles import load
from xlatools.profiles.search import SHIPPED_DIR
from xlatools.records import to_json

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "buildplan"
SHIPPED = sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))

# JAX build/build.py options (its argparse definitions): global ones, then `build`'s.
BUILDPY_OPTIONS = {
    "--python_version",
    "--bazel_path",
    "--bazel_startup_options",
    "--bazel_options",
    "--dry_run",
    "--verbose",
    "--detailed_timestamped_log",
    "--wheels",
    "--editable",
    "--output_path",
    "--configure_only",
    "--cuda_version",
    "--cuda_major_version",
    "--cudnn_version",
    "--nccl_version",
    "--disable_nccl",
    "--cuda_compute_capabilities",
    "--build_cuda_with_clang",
    "--clang_path",
    "--target_cpu_features",
    "--local_xla_path",
}
BUILDPY_WHEELS = {"jaxlib", "jax-cuda-plugin", "jax-cuda-pjrt", "jax-rocm-plugin", "jax-rocm-pjrt", "jax"}


def options(tmp: Path = Path("/work/tree"), **overrides) -> BuildOptions:
    values = dict(
        source=tmp,
        out_root=Path("/work/artifacts/builds"),
        dist_dir=Path("/work/dist"),
        cache_root=Path("/home/dev/.cache/xlatools"),
        run_id="0123abcd",
        uid=1000,
        gid=1000,
        user_name="dev",
    )
    values.update(overrides)
    return BuildOptions(**values)


def write_profile(directory: Path, name: str, text: str) -> str:
    path = directory / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def plan_json(name: str) -> str:
    resolved = load(name)
    plan = plan_build(resolved, options(), rendered_bazelrc=render(profile_for_tree(resolved), version="TEST"))
    text = json.dumps(to_json(plan), indent=2) + "\n"
    return text.replace(str(REPO), "<repo>")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_profile_plan_matches_golden(name):
    text = plan_json(name)
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("XLATOOLS_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.exists(), f"missing golden file {golden}; run with XLATOOLS_UPDATE_GOLDEN=1"
    assert text == golden.read_text()


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_plans_use_only_real_buildpy_options(name):
    argv = plan_build(load(name), options()).argv
    assert argv[:3] == ("python3", "build/build.py", "build")
    for arg in argv[3:]:
        assert arg.split("=", 1)[0] in BUILDPY_OPTIONS, arg
    wheels = next(a for a in argv if a.startswith("--wheels=")).split("=", 1)[1].split(",")
    assert set(wheels) <= BUILDPY_WHEELS


def test_dbg_cuda_plan_is_the_headline_build():
    plan = plan_build(load("dbg-cuda"), options())
    argv = list(plan.argv)
    assert "--wheels=jaxlib,jax-cuda-plugin,jax-cuda-pjrt" in argv
    for expected in (
        "--cuda_version=12.9.1",
        "--cudnn_version=9.8.0",
        "--nccl_version=2.27.7",
        "--cuda_compute_capabilities=sm_90",
        "--python_version=3.11",
        "--bazel_options=--config=xlatools",
        "--output_path=/xlatools/out",
    ):
        assert expected in argv
    assert "--disable_nccl" not in argv
    assert not any(a.startswith("--cuda_major_version") for a in argv)  # 12 is build.py's default
    assert plan.image.ref.startswith("xlatools-build-cuda:") and plan.image.dockerfile.endswith("cuda/Dockerfile")
    assert "--compilation_mode=dbg" in plan.bazelrc
    assert "disk_cache" not in plan.bazelrc  # location-dependent: on the command line instead
    assert plan.user == "1000:1000" and plan.workdir == "/xlatools/src"
    assert plan.env["HOME"] == "/xlatools/home" and plan.env["USER"] == "dev"
    assert plan.labels["org.xlatools.managed"] == "1" and "0123abcd" in plan.container_name
    targets = {m.target: m for m in plan.mounts}
    assert set(targets) == {"/xlatools/src", "/xlatools/out", "/xlatools/bazel-cache", "/xlatools/home"}
    assert not any("docker.sock" in m.source for m in plan.mounts)


def test_cpu_plan_has_no_cuda_options():
    argv = plan_build(load("dbg-cpu"), options()).argv
    assert not any("cuda" in a or "nccl" in a for a in argv)
    assert "--wheels=jaxlib" in argv


def test_nccl_false_disables_nccl_and_cuda13_sets_major(tmp_path):
    path = write_profile(tmp_path, "c13", 'extends: dbg-cuda\ntarget:\n  cuda: "13.0.0"\n  nccl: false\n')
    argv = plan_build(load(path), options()).argv
    assert "--disable_nccl" in argv and "--cuda_major_version=13" in argv
    assert not any(a.startswith("--nccl_version") for a in argv)


def test_cuda_without_version_is_a_usage_error(tmp_path):
    path = write_profile(tmp_path, "nocuda", "extends: base\ntarget:\n  backend: cuda\n")
    with pytest.raises(UsageError, match="target.cuda"):
        plan_build(load(path), options())


def test_local_xla_is_mounted_read_only_and_passed(tmp_path):
    plan = plan_build(load("dbg-cpu"), options(local_xla=tmp_path))
    assert f"--local_xla_path={C_XLA}" in plan.argv
    mount = next(m for m in plan.mounts if m.target == C_XLA)
    assert mount.read_only and mount.source == str(tmp_path)


def test_jobs_option_overrides_profile_and_profile_disk_cache_is_used(tmp_path):
    path = write_profile(tmp_path, "j", "extends: dbg-cpu\nbazel:\n  jobs: 4\n  disk_cache: cache-here\n")
    plan = plan_build(load(path), options(jobs=7))
    assert "--bazel_options=--jobs=7" in plan.argv
    assert plan.bazel_cache == str(tmp_path / "cache-here")  # relative to the profile file


def test_local_plan_uses_host_paths(tmp_path):
    plan = plan_build(load("dbg-cpu"), options(tmp_path, local=True))
    assert plan.mode == "local" and plan.image is None and plan.mounts == ()
    assert plan.workdir == str(tmp_path)
    assert f"--output_path={plan.stage_dir}" in plan.argv
    assert f"--bazel_options=--disk_cache={plan.bazel_cache}" in plan.argv
    assert "HOME" not in plan.env  # the user's own HOME on the host


def test_ca_bundle_is_mounted_baked_in_and_exported(tmp_path):
    ca = tmp_path / "corp.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    path = write_profile(
        tmp_path,
        "ca",
        "extends: dbg-cpu\nbazel:\n  remote_cache: https://cache.example:9090\n"
        "build:\n  container:\n    ca_bundle: corp.pem\n",
    )
    plan = plan_build(load(path), options())
    assert plan.image.ca_bundle == str(ca)
    assert any(m.target == C_CA_BUNDLE and m.read_only for m in plan.mounts)
    assert plan.env["PIP_CERT"] == plan.env["SSL_CERT_FILE"] == C_CA_BUNDLE
    assert f"--bazel_options=--tls_certificate={C_CA_BUNDLE}" in plan.argv
    ca.write_text("-----BEGIN CERTIFICATE-----\nchanged\n")
    assert plan_build(load(path), options()).image.ref != plan.image.ref  # baked in: part of the tag


def test_missing_ca_bundle_is_a_usage_error(tmp_path):
    path = write_profile(tmp_path, "ca", "extends: dbg-cpu\nbuild:\n  container:\n    ca_bundle: nope.pem\n")
    with pytest.raises(UsageError, match="ca_bundle"):
        plan_build(load(path), options())


def test_remote_cache_on_localhost_needs_host_network(tmp_path):
    path = write_profile(tmp_path, "rc", "extends: dbg-cpu\nbazel:\n  remote_cache: http://127.0.0.1:1234\n")
    plan = plan_build(load(path), options())
    assert "--remote_cache=http://127.0.0.1:1234" in plan.bazelrc
    assert any("network: host" in note for note in plan.notes)
    path = write_profile(tmp_path, "rc2", "extends: rc\nbuild:\n  container:\n    network: host\n")
    plan = plan_build(load(path), options())
    assert plan.network == "host" and not plan.notes


def test_image_tag_follows_dockerfile_and_build_args(tmp_path):
    base = plan_build(load("dbg-cpu"), options()).image
    assert base.ref == plan_build(load("dbg-cpu"), options(run_id="other")).image.ref  # stable
    path = write_profile(
        tmp_path, "args", "extends: dbg-cpu\nbuild:\n  container:\n    build_args: {TOOLCHAIN: clang-16}\n"
    )
    changed = plan_build(load(path), options()).image
    assert changed.ref != base.ref and changed.build_args == {"TOOLCHAIN": "clang-16"}
    assert content_hash(b"a", {}, b"bc") != content_hash(b"ab", {}, b"c")


def test_custom_dockerfile_relative_to_profile_and_ready_image(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "Dockerfile").write_text("FROM scratch\n")
    path = write_profile(tmp_path, "custom", "extends: dbg-cpu\nbuild:\n  container:\n    dockerfile: img\n")
    spec = plan_build(load(path), options()).image
    assert spec.dockerfile == str(tmp_path / "img" / "Dockerfile") and spec.ref.startswith("xlatools-build-custom:")
    path = write_profile(tmp_path, "ready", "extends: dbg-cpu\nbuild:\n  container:\n    image: corp/jaxbuild:1\n")
    spec = plan_build(load(path), options()).image
    assert spec.prebuilt and spec.ref == "corp/jaxbuild:1"
    path = write_profile(tmp_path, "gone", "extends: dbg-cpu\nbuild:\n  container:\n    dockerfile: nowhere\n")
    with pytest.raises(UsageError, match="does not exist"):
        plan_build(load(path), options())


def test_command_template_expands_placeholders(tmp_path):
    path = write_profile(
        tmp_path,
        "tf",
        "extends: dbg-cpu\nbuild:\n  command: [bazel, build, '{bazel_options}', "
        "'//tensorflow/tools/pip_package:wheel', '--repo_env=OUT={output}', '{{x}}']\n",
    )
    argv = plan_build(load(path), options()).argv
    assert argv == (
        "bazel",
        "build",
        "--config=xlatools",
        "--disk_cache=/xlatools/bazel-cache",
        "//tensorflow/tools/pip_package:wheel",
        "--repo_env=OUT=/xlatools/out",
        "{x}",
    )


@pytest.mark.parametrize("token, message", [("{nope}", "unknown placeholder {nope}"), ("{", "malformed")])
def test_command_template_errors_name_the_element(token, message):
    inputs = CommandInputs("/s", "/o", ("jaxlib",), None, "xlatools", "/c", None, None)
    with pytest.raises(UsageError, match=re.escape(message)) as info:
        expand_template(["echo", token], inputs)
    assert "build.command[1]" in info.value.message


def test_rocm_needs_a_command_template(tmp_path):
    path = write_profile(tmp_path, "rocm", "extends: base\ntarget:\n  backend: rocm\n")
    with pytest.raises(UsageError, match="ROCm"):
        plan_build(load(path), options())
