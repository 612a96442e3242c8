"""`xlatools build` in a real Docker engine on the fixture tree: wheel and
manifest, image reuse, failure, Ctrl-C, ownership, --keep-container + clean."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import sigint_default
from tests.integration.building.build_helpers import PROFILES, containers_of, profile_file, run_build, wheel_info

FIXTURE_CPU = str(PROFILES / "fixture-cpu.yaml")
pytestmark = pytest.mark.docker


def test_build_produces_wheel_manifest_and_log(docker_client, base_image, cache_root, tree, tmp_path):
    xla = tmp_path / "my-xla"
    xla.mkdir()
    (xla / "WORKSPACE").write_text('workspace(name = "xla")\n')
    (xla / "BUILD").write_text('exports_files(["commit.txt"])\n')
    (xla / "commit.txt").write_text("local-xla-checkout\n")
    profile = profile_file(tmp_path, "fixture-xla", f"extends: {FIXTURE_CPU}\nsource:\n  xla:\n    local_path: {xla}\n")

    result = run_build(tree, profile, cache_root)
    assert result.proc.returncode == 0, result.proc.stderr[-3000:]
    manifest = result.manifest
    assert manifest["status"] == "ok" and manifest["exit_code"] == 0 and manifest["kind"] == "build"
    assert manifest["plan"]["argv"][:3] == ["python3", "build/build.py", "build"]
    assert manifest["image"]["id"].startswith("sha256:")
    assert set(manifest["durations"]) >= {"image_s", "build_s", "total_s"}
    [wheel] = manifest["wheels"]
    dist_wheel = tmp_path / "dist" / wheel["name"]
    assert Path(wheel["dist_path"]) == dist_wheel and dist_wheel.is_file()
    assert (result.bundle / wheel["path"]).read_bytes() == dist_wheel.read_bytes()
    from xlatools.fsutil import sha256_file

    assert sha256_file(dist_wheel) == wheel["sha256"]
    # The profile reached bazel: debug config, build.py's options, the local XLA.
    info = wheel_info(dist_wheel)
    assert info == {
        "compilation_mode": "dbg",
        "env": {"HERMETIC_PYTHON_VERSION": "3.11"},
        "xla": "local-xla-checkout",
        "xla_commit": "0" * 40,
    }
    log = (result.bundle / "build.log").read_text()
    assert "build:xlatools in file /xlatools/src/.bazelrc.user" in log
    assert "--override_repository=xla=/xlatools/xla" in log
    assert "Build completed successfully" in result.proc.stderr  # streamed live, not only logged
    assert "# >>> xlatools config 'xlatools'" in (tree / ".bazelrc.user").read_text()
    assert not containers_of(docker_client, "fixture-xla")
    assert "build.log" in {f["path"] for f in manifest["files"]}


def test_unchanged_second_build_reuses_the_image(docker_client, base_image, cache_root, tree):
    first = run_build(tree, FIXTURE_CPU, cache_root)
    assert first.proc.returncode == 0, first.proc.stderr[-3000:]
    second = run_build(tree, FIXTURE_CPU, cache_root)
    assert second.proc.returncode == 0, second.proc.stderr[-3000:]
    assert second.manifest["image"]["built"] is False
    assert second.manifest["image"]["id"] == first.manifest["image"]["id"]
    assert "image reused" in second.proc.stderr


def test_failing_build_passes_exit_status_and_shows_log_tail(docker_client, base_image, cache_root, tree, tmp_path):
    profile = profile_file(
        tmp_path, "fixture-fail", f"extends: {FIXTURE_CPU}\nbazel:\n  action_env:\n    FIXTURE_FAIL: '1'\n"
    )
    result = run_build(tree, profile, cache_root, "--json")
    assert result.proc.returncode == 1  # bazel's exit status for a failed build, passed through
    assert json.loads(result.proc.stdout)["status"] == "failed"  # the manifest, even on failure
    assert "the build failed with exit status 1" in result.proc.stderr
    assert "FIXTURE: failing on purpose" in result.proc.stderr.split("error:", 1)[1]  # the tail, in the error
    assert "Traceback" not in result.proc.stderr
    manifest = result.manifest
    assert manifest["status"] == "failed" and manifest["exit_code"] == 1 and manifest["wheels"] == []
    assert any("failing on purpose" in line for line in manifest["log_tail"])
    assert manifest["hints"] == []  # scanned against the failure signatures: none is known in this log
    assert not containers_of(docker_client, "fixture-fail")
    assert not list((tmp_path / "out" / ".staging").iterdir())


def test_ctrl_c_removes_container_and_records_interrupted(docker_client, base_image, cache_root, tree, tmp_path):
    profile = profile_file(
        tmp_path,
        "fixture-sleep",
        f"extends: {FIXTURE_CPU}\nbazel:\n  action_env:\n    FIXTURE_SLEEP: '600'\n"
        "    FIXTURE_MARKER: /xlatools/out/sleeping\n",
    )
    out = tmp_path / "out"
    env = dict(os.environ, XLATOOLS_CACHE_DIR=str(cache_root), NO_COLOR="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlatools", "build", "--profile", profile, "--source", str(tree), "--out", str(out)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        _wait_for_marker(out, "sleeping", proc)
        assert containers_of(docker_client, "fixture-sleep")  # it is running now
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr
    assert not containers_of(docker_client, "fixture-sleep")
    manifest = json.loads((out / "latest" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"


def _wait_for_marker(out: Path, name: str, proc: subprocess.Popen) -> None:
    """Wait (generously: the image may still be building) until the sleeping
    build action has left its marker in the mounted output dir."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if list(out.glob(f".staging/*/{name}")):
            return
        if proc.poll() is not None:
            pytest.fail(f"build ended early ({proc.returncode}): {proc.stderr.read()[-2000:]}")
        time.sleep(0.5)
    pytest.fail(f"the build never reached the sleeping action ({name} marker)")


def test_container_runs_as_given_uid_and_its_files_are_owned_by_it(docker_client, base_image, tree, tmp_path):
    """In-process, so the uid can differ from ours when we are root (as in CI)."""
    from xlatools.builder.execute import execute
    from xlatools.console import Reporter
    from xlatools.records import to_json
    from xlatools.records.build import TreeInfo
    from xlatools.builder.plan import BuildOptions, plan_build
    from xlatools.bazelrc import write_tree_block
    from xlatools.profiles import load

    uid, gid = (4321, 4322) if os.getuid() == 0 else (os.getuid(), os.getgid())
    cache, stage = tmp_path / "cache", tmp_path / "out" / ".staging" / "owner"
    # What `xlatools build` creates as the invoking user, created here for `uid`.
    for path in (cache / "bazel-disk-cache", cache / "home" / "fixture-cpu", stage):
        path.mkdir(parents=True)
    if os.getuid() == 0:
        for path in [tree, *tree.rglob("*"), cache, *cache.rglob("*"), stage]:
            os.lchown(path, uid, gid)
    plan = plan_build(
        load(FIXTURE_CPU),
        BuildOptions(
            source=tree,
            out_root=tmp_path / "out",
            dist_dir=tmp_path / "dist",
            cache_root=cache,
            run_id="owner",
            uid=uid,
            gid=gid,
            user_name="builder",
        ),
    )
    write_tree_block(tree, plan.config_name, plan.bazelrc, dry_run=False)
    manifest = to_json(
        execute(
            plan, out_root=tmp_path / "out", tree=TreeInfo(), pin=None, client=docker_client, reporter=Reporter.silent()
        ).raise_for_status()
    )
    assert manifest["status"] == "ok"
    bundle = Path(manifest["bundle"])
    created = [
        tree / ".jax_configure.bazelrc",
        bundle / manifest["wheels"][0]["path"],
        *(p for p in (cache / "bazel-disk-cache").rglob("*") if p.is_file()),
    ]
    assert len(created) > 2
    for path in created:  # written inside the container
        assert (path.stat().st_uid, path.stat().st_gid) == (uid, gid), path
    for path in (bundle / "build.log", bundle / "manifest.json"):  # written by this process
        assert path.stat().st_uid == os.getuid()


def test_keep_container_then_clean_removes_it(docker_client, base_image, cache_root, tree, tmp_path, cli):
    profile = profile_file(tmp_path, "fixture-keep", f"extends: {FIXTURE_CPU}\n")
    result = run_build(tree, profile, cache_root, "--keep-container")
    assert result.proc.returncode == 0, result.proc.stderr[-3000:]
    [kept] = containers_of(docker_client, "fixture-keep")
    assert result.manifest["kept_container"] == kept.name
    listed = json.loads(cli("clean", "--dry-run", "--json", "--images").stdout)["would_remove"]
    assert kept.name in {row["name"] for row in listed if row["type"] == "container"}
    image_ref = result.manifest["image"]["ref"]
    assert any(image_ref in row["name"] for row in listed if row["type"] == "image")
    assert containers_of(docker_client, "fixture-keep") and docker_client.images.get(image_ref)
    done = cli("clean")
    assert done.returncode == 0 and kept.name in done.stderr
    assert not containers_of(docker_client, "fixture-keep")


def test_missing_base_image_is_an_environment_problem(docker_client, tree, tmp_path, cache_root):
    profile = profile_file(
        tmp_path,
        "fixture-nobase",
        f"extends: {FIXTURE_CPU}\nbuild:\n  container:\n    base_image: xlatools-no-such-base:1\n",
    )
    result = run_build(tree, profile, cache_root)
    assert result.proc.returncode == 3, result.proc.stderr[-2000:]
    assert "from the base image xlatools-no-such-base:1, which this Docker engine does not have" in result.proc.stderr
    assert "Traceback" not in result.proc.stderr
    # refused before anything is written: no bundle, no bazel config in the tree
    assert not result.out.exists() and not (tree / ".bazelrc.user").exists()


def test_failing_image_step_is_reported_with_its_output(docker_client, base_image, tree, tmp_path, cache_root):
    profile = profile_file(
        tmp_path,
        "fixture-badpkg",
        f"extends: {FIXTURE_CPU}\nbuild:\n  container:\n"
        "    build_args:\n      EXTRA_PACKAGES: xlatools-no-such-package\n",
    )
    result = run_build(tree, profile, cache_root)
    assert result.proc.returncode == 1
    assert "Unable to locate package xlatools-no-such-package" in result.proc.stderr  # streamed
    assert "building image xlatools-build-cpu:" in result.proc.stderr and "failed" in result.proc.stderr
    assert "Unable to locate package" in (result.bundle / "build.log").read_text()
