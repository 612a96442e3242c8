"""Real bazel (Debian's 4.2.3) with the `.bazelrc.user` that `xlatools bazelrc` writes from a profile's
remote settings, against real servers on 127.0.0.1: nginx (HTTP, WebDAV) and BuildGrid (gRPC).
A second build from a clean output base (and no disk cache) must be served from the cache."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.remote.servers import remote_cache_hits

pytestmark = pytest.mark.bazel

BUILD = """genrule(name = "a", outs = ["a.txt"], cmd = "echo first > $@")
genrule(name = "b", srcs = [":a"], outs = ["b.txt"], cmd = "cat $< > $@; echo second >> $@")
"""


@pytest.fixture
def workspace(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "WORKSPACE").write_text("")
    (root / "BUILD").write_text(BUILD)
    (root / ".bazelrc").write_text("build --spawn_strategy=local\ntry-import %workspace%/.bazelrc.user\n")
    return root


def configure(cli, workspace: Path, profile_text: str) -> str:
    profile = workspace.parent / "team.yaml"
    profile.write_text(profile_text)
    written = cli("bazelrc", "--profile", str(profile), "--source", str(workspace), cwd=workspace)
    assert written.returncode == 0, written.stderr
    return (workspace / ".bazelrc.user").read_text()


def build(bazel_bin: str, workspace: Path, machine: str) -> subprocess.CompletedProcess:
    """One build as a fresh machine: its own output root (no output base, no disk cache)."""
    root = workspace.parent / f"bazel-{machine}"
    try:
        return subprocess.run(
            [bazel_bin, f"--output_user_root={root}", "build", "--config=xlatools", "//:b"],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        subprocess.run(
            [bazel_bin, f"--output_user_root={root}", "shutdown"], cwd=workspace, capture_output=True, timeout=120
        )


def test_http_cache_on_nginx_serves_a_clean_output_base(bazel_bin, workspace, cli, nginx):
    cache = nginx()
    rc = configure(cli, workspace, f"bazel:\n  remote_cache: {cache.url}\n")
    assert f"build:xlatools --remote_cache={cache.url}" in rc
    first = build(bazel_bin, workspace, "one")
    assert first.returncode == 0, first.stderr[-3000:]
    assert remote_cache_hits(first.stderr) == 0 and cache.count("PUT", "/ac/", 201) == 2, cache.requests()
    second = build(bazel_bin, workspace, "two")
    assert second.returncode == 0, second.stderr[-3000:]
    assert remote_cache_hits(second.stderr) == 2, second.stderr[-2000:]
    assert cache.count("GET", "/ac/", 200) == 2  # the server agrees: both actions came from it
    assert (workspace / "bazel-bin" / "b.txt").read_text() == "first\nsecond\n"


def test_grpc_cache_on_buildgrid_serves_a_clean_output_base(bazel_bin, workspace, cli, buildgrid):
    configure(cli, workspace, f"bazel:\n  remote_cache: {buildgrid.url}\n")
    first = build(bazel_bin, workspace, "one")
    assert first.returncode == 0, first.stderr[-3000:]
    second = build(bazel_bin, workspace, "two")
    assert second.returncode == 0, second.stderr[-3000:]
    assert remote_cache_hits(second.stderr) == 2, second.stderr[-2000:]


def test_read_only_action_cache_stops_bazel_until_uploads_are_turned_off(bazel_bin, workspace, cli, buildgrid):
    # An action cache that refuses client writes (CI-only uploads): bazel 4.2.3 reads that from the
    # server's capabilities and refuses to build; the fix doctor gives makes it build (reading only).
    profile = f"bazel:\n  remote_cache: {buildgrid.url}\n  remote_instance_name: readonly\n"
    configure(cli, workspace, profile)
    refused = build(bazel_bin, workspace, "one")
    assert refused.returncode != 0
    assert "not authorized to write local results to the remote cache" in refused.stderr, refused.stderr[-2000:]
    configure(cli, workspace, profile + "  extra_options: [--noremote_upload_local_results]\n")
    reading = build(bazel_bin, workspace, "two")
    assert reading.returncode == 0, reading.stderr[-2000:]


def test_remote_executor_settings_reach_bazel_and_the_server(bazel_bin, workspace, cli, buildgrid):
    """No REAPI worker installs from the package registries, so the server has no execution service:
    bazel, configured by the generated rc, asks it and is told so. That proves the pass-through."""
    rc = configure(
        cli,
        workspace,
        (
            f"bazel:\n  remote_executor: {buildgrid.url}\n  remote_instance_name: readonly\n"
            "  remote_platform_properties:\n    OSFamily: Linux\n    container-image: none\n"
        ),
    )
    assert f"build:xlatools --remote_executor={buildgrid.url}" in rc
    assert "build:xlatools --remote_instance_name=readonly" in rc
    assert "build:xlatools --remote_default_exec_properties=OSFamily=Linux" in rc
    assert "build:xlatools --remote_default_exec_properties=container-image=none" in rc
    done = build(bazel_bin, workspace, "rbe")
    assert done.returncode != 0
    assert "Remote execution is not supported by the remote server" in done.stderr, done.stderr[-2000:]
