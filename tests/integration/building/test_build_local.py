"""`xlatools build --local`: the same plan on the host with real bazel."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.building.build_helpers import run_build, wheel_info


@pytest.mark.bazel
def test_local_build_runs_the_plan_on_the_host(bazel_bin, tree, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}  # bazel's output base goes below HOME
    try:
        result = run_build(tree, "dbg-cpu", tmp_path / "cache", "--local", "--json", env=env)
        assert result.proc.returncode == 0, result.proc.stderr[-3000:]
        manifest = result.manifest
        assert manifest["mode"] == "local" and manifest["status"] == "ok"
        assert "image" not in manifest
        [wheel] = manifest["wheels"]
        assert wheel_info(tmp_path / "dist" / wheel["name"])["compilation_mode"] == "dbg"
        assert f"--disk_cache={tmp_path / 'cache' / 'bazel-disk-cache'}" in (result.bundle / "build.log").read_text()
        assert json.loads(result.proc.stdout)["status"] == "ok"
    finally:  # a host bazel server outlives the build; stop ours
        subprocess.run(
            [bazel_bin, "shutdown"],
            cwd=tree,
            env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            timeout=120,
        )


def test_a_failing_build_command_exits_1_and_keeps_its_own_status(tree, tmp_path):
    profile = tmp_path / "exit3.yaml"
    profile.write_text(
        'extends: base\nbuild:\n  command: ["python3", "-c", "import sys; print(\'boom\'); sys.exit(3)"]\n'
    )
    result = run_build(tree, str(profile), tmp_path / "cache", "--local", "--json")
    assert result.proc.returncode == 1, result.proc.stderr[-2000:]
    assert "the build failed with exit status 3" in result.proc.stderr and "Traceback" not in result.proc.stderr
    manifest = result.manifest
    assert (manifest["status"], manifest["exit_code"], manifest["returncode"]) == ("failed", 1, 3)
