"""`xlatools build --local` of the fixture tree against an nginx cache that wants credentials (basic
auth and a token header): they come from the environment and a file, reach bazel (uploads and hits
happen), and never land in the tree, the manifest, the log, the output or the `--dry-run` plan."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.building.build_helpers import run_build

pytestmark = pytest.mark.bazel

PASSWORD = "s3cret-pass-7481"
TOKEN = "tok-99231-secret"


def leaks(*texts: str) -> list[str]:
    return [secret for secret in (PASSWORD, TOKEN) if any(secret in text for text in texts)]


@pytest.fixture
def team_profile(tmp_path, nginx):
    cache = nginx(basic_auth=("team", PASSWORD), token=TOKEN)
    (tmp_path / "token.txt").write_text(TOKEN + "\n")
    profile = tmp_path / "team.yaml"
    profile.write_text(
        f"extends: dbg-cpu\nbazel:\n  remote_cache: {cache.url}\n  remote_credentials:\n"
        "    basic_auth: {env: TEAM_CACHE_AUTH}\n    headers:\n      X-Cache-Token: {file: token.txt}\n"
    )
    return cache, str(profile)


def test_credentials_reach_bazel_and_nothing_else(bazel_bin, tree, tmp_path, team_profile):
    cache, profile = team_profile
    secret_env = {"TEAM_CACHE_AUTH": f"team:{PASSWORD}"}
    homes = []

    def build(machine: str, *args: str, env: dict | None = None):
        home = tmp_path / f"home-{machine}"
        home.mkdir(exist_ok=True)
        homes.append(home)
        return run_build(
            tree, profile, tmp_path / f"cache-{machine}", "--local", *args, env={"HOME": str(home), **(env or {})}
        )

    try:
        missing = build("none", "--json")
        assert missing.proc.returncode == 3, missing.proc.stderr[-2000:]
        assert "TEAM_CACHE_AUTH is not set" in missing.proc.stderr and not missing.out.exists()

        dry = build("dry", "--dry-run", "--json", env=secret_env)
        assert dry.proc.returncode == 0, dry.proc.stderr[-2000:]
        plan = json.loads(dry.proc.stdout)
        assert plan["credentials"]["basic_auth"] == {"env": "TEAM_CACHE_AUTH", "file": None}
        assert f"--bazel_startup_options=--bazelrc={plan['private_rc']}" in plan["argv"]

        first = build("one", env=secret_env)
        assert first.proc.returncode == 0, first.proc.stderr[-3000:]
        assert cache.count("PUT", "/ac/", 201) >= 1, cache.requests()  # authenticated uploads
        second = build("two", "--json", env=secret_env)  # another machine: new output base and disk cache
        assert second.proc.returncode == 0, second.proc.stderr[-3000:]
        manifest = second.manifest
        assert manifest["bazel_processes"]["by_kind"].get("remote cache hit", 0) >= 1, manifest["bazel_processes"]
        assert cache.count("GET", "/ac/", 200) >= 1

        log = (second.bundle / "build.log").read_text()
        assert "--remote_header=X-Cache-Token=***" in log  # --announce_rc printed the private rc, scrubbed
        texts = [
            dry.proc.stdout,
            dry.proc.stderr,
            log,
            (tree / ".bazelrc.user").read_text(),
            (second.bundle / "manifest.json").read_text(),
        ]
        for done in (first, second):
            texts += [done.proc.stdout, done.proc.stderr, (done.bundle / "manifest.json").read_text()]
        assert leaks(*texts) == []
        assert not Path(manifest["plan"]["private_rc"]).parent.exists()  # removed when the build ended
    finally:
        for home in homes:
            subprocess.run(
                [bazel_bin, "shutdown"],
                cwd=tree,
                env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                capture_output=True,
                timeout=120,
            )


def test_credentials_in_a_profile_are_refused(tree, tmp_path):
    profile = tmp_path / "leaky.yaml"
    profile.write_text(
        f"extends: dbg-cpu\nbazel:\n  remote_cache: http://team:{PASSWORD}@127.0.0.1:9\n"
        f"  extra_options: ['--remote_header=Authorization=Bearer {TOKEN}']\n"
    )
    done = run_build(tree, str(profile), tmp_path / "cache", "--local", "--dry-run")
    assert done.proc.returncode == 2
    assert "credentials do not belong in a profile" in done.proc.stderr
    assert "--remote_header carries a secret" in done.proc.stderr
    assert leaks(done.proc.stdout, done.proc.stderr) == []
