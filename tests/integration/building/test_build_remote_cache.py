"""bazel.remote_cache in a container build: a second build from a clean output base and an empty
disk cache gets its results from a real nginx cache on the host's 127.0.0.1, which wants a token
header; the token comes from a file and reaches bazel inside the container through the private rc
(mounted read-only), never the tree, the manifest or the log."""

from __future__ import annotations

import pytest

from tests.integration.building.build_helpers import PROFILES, profile_file, run_build

pytestmark = pytest.mark.docker
TOKEN = "container-tok-6677"


def test_second_build_from_clean_output_base_hits_the_remote_cache(docker_client, base_image, tree, tmp_path, nginx):
    cache = nginx(token=TOKEN)
    (tmp_path / "token").write_text(TOKEN + "\n")
    profile = profile_file(
        tmp_path,
        "fixture-remote",
        (
            f"extends: {PROFILES / 'fixture-cpu.yaml'}\n"
            f"bazel:\n  remote_cache: {cache.url}\n  remote_instance_name: team-a\n"
            "  remote_credentials:\n    headers: {X-Cache-Token: {file: token}}\n"
            # the cache listens on the host's loopback
            "build:\n  container:\n    network: host\n"
        ),
    )
    first = run_build(tree, profile, tmp_path / "cache-1")
    assert first.proc.returncode == 0, first.proc.stderr[-3000:]
    assert cache.count("PUT", "/ac/", 201) > 0, cache.requests()  # uploads carried the token
    assert "remote cache hit" not in (first.bundle / "build.log").read_text()

    # Another machine, in effect: new HOME (output base) and disk cache.
    second = run_build(tree, profile, tmp_path / "cache-2")
    assert second.proc.returncode == 0, second.proc.stderr[-3000:]
    log = (second.bundle / "build.log").read_text()
    assert "remote cache hit" in log, log[-2000:]
    assert cache.count("GET", "/ac/", 200) > 0
    rc = (tree / ".bazelrc.user").read_text()
    assert f"--remote_cache={cache.url}" in rc and "--remote_instance_name=team-a" in rc
    for text in (rc, log, second.proc.stderr, (second.bundle / "manifest.json").read_text()):
        assert TOKEN not in text
