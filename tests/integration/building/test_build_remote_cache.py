"""bazel.remote_cache passes through: a second build from a clean output base
and an empty disk cache gets its results from a real HTTP cache on 127.0.0.1."""

from __future__ import annotations

import pytest

from tests.integration.building.cache_server import CacheServer
from tests.integration.building.build_helpers import PROFILES, profile_file, run_build

pytestmark = pytest.mark.docker


def test_second_build_from_clean_output_base_hits_the_remote_cache(docker_client, base_image, tree, tmp_path):
    with CacheServer() as cache:
        profile = profile_file(tmp_path, "fixture-remote", (
            f"extends: {PROFILES / 'fixture-cpu.yaml'}\n"
            f"bazel:\n  remote_cache: {cache.url}\n  remote_instance_name: team-a\n"
            # the cache listens on the host's loopback
            "build:\n  container:\n    network: host\n"
        ))
        first = run_build(tree, profile, tmp_path / "cache-1")
        assert first.proc.returncode == 0, first.proc.stderr[-3000:]
        assert cache.puts > 0, "the first build uploaded nothing"
        assert "remote cache hit" not in (first.bundle / "build.log").read_text()

        # Another machine, in effect: new HOME (output base) and disk cache.
        hits_before = cache.hits
        second = run_build(tree, profile, tmp_path / "cache-2")
        assert second.proc.returncode == 0, second.proc.stderr[-3000:]
        log = (second.bundle / "build.log").read_text()
        assert "remote cache hit" in log, log[-2000:]
        assert cache.hits > hits_before
        assert f"--remote_cache={cache.url}" in (tree / ".bazelrc.user").read_text()
        assert "--remote_instance_name=team-a" in (tree / ".bazelrc.user").read_text()
