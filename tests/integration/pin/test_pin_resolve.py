"""`xlatools pin resolve` against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tarfile
import time

import pytest
from tests.helpers import sigint_default
from tests.integration.pin.helpers import (
    COMMIT,
    cache_files,
    make_tarball,
    make_tree,
    sha,
    snapshot,
    write_profile,
)

from xlatools.pin.sri import hex_to_sri, sri_to_hex


def xla_profile(tmp_path, server, extra: str = "", path: str = "/xla/{commit}.tar.gz"):
    return write_profile(tmp_path, f'  xla:\n    commit: "{COMMIT}"\n    urls: ["{server.url(path)}"]\n{extra}')


def read_lock(tmp_path):
    return json.loads((tmp_path / "xlatools.lock").read_text())


def assert_no_traceback(result):
    assert "Traceback" not in result.stderr, result.stderr


def test_fresh_resolve_writes_a_complete_lock(tmp_path, archive_server, pin):
    body = make_tarball(f"xla-{COMMIT}", commit=COMMIT)
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", body)
    (tmp_path / "fix.patch").write_text("--- a/x\n+++ b/x\n")
    profile = xla_profile(tmp_path, archive_server, '    patches: ["fix.patch"]\n')

    result = pin("resolve", "--profile", str(profile))

    assert result.returncode == 0, result.stderr
    entry = read_lock(tmp_path)["dependencies"]["xla"]
    assert read_lock(tmp_path)["lock_version"] == 2
    assert entry["commit"] == COMMIT and entry["kind"] == "archive"
    assert entry["sha256"] == sha(body)
    assert entry["integrity"] == hex_to_sri(sha(body)) and sri_to_hex(entry["integrity"]) == sha(body)
    assert entry["strip_prefix"] == f"xla-{COMMIT}"
    assert entry["urls"] == [archive_server.url(f"/xla/{COMMIT}.tar.gz")]
    assert entry["patches"] == [{"path": "fix.patch", "sha256": sha((tmp_path / "fix.patch").read_bytes())}]
    assert entry["resolved_at"].endswith("Z")
    assert archive_server.total_requests == 1
    assert cache_files(tmp_path) == sorted(
        [f"pin/sha256/{sha(body)}", *[f for f in cache_files(tmp_path) if "index" in f]]
    )


def test_second_resolve_is_a_cache_hit_with_zero_requests(tmp_path, archive_server, pin):
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}"))
    profile = xla_profile(tmp_path, archive_server)
    assert pin("resolve", "--profile", str(profile)).returncode == 0
    assert archive_server.total_requests == 1
    lock_before = (tmp_path / "xlatools.lock").read_bytes()

    again = pin("resolve", "--profile", str(profile), "--json")
    offline = pin("resolve", "--profile", str(profile), "--offline", "--json")

    assert again.returncode == 0 and offline.returncode == 0, again.stderr + offline.stderr
    assert archive_server.total_requests == 1
    assert json.loads(again.stdout)["dependencies"]["xla"]["source"] == "cache"
    assert json.loads(offline.stdout)["written"] is False
    assert (tmp_path / "xlatools.lock").read_bytes() == lock_before  # same pin: the lock is not rewritten


def test_stated_sha256_mismatch_changes_nothing(tmp_path, archive_server, pin):
    good = make_tarball(f"xla-{COMMIT}")
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", good)
    assert pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server))).returncode == 0
    lock_before = (tmp_path / "xlatools.lock").read_bytes()
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    tree_before = snapshot(tree)
    other = make_tarball(f"xla-{COMMIT}", {"BUILD": b"# something else\n"})
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", other)
    wrong = "0" * 64
    profile = xla_profile(tmp_path, archive_server, f'    sha256: "{wrong}"\n')

    result = pin("resolve", "--profile", str(profile))

    assert result.returncode == 2, result.stderr
    assert f"expected {wrong}" in result.stderr and f"actual   {sha(other)}" in result.stderr
    assert_no_traceback(result)
    assert (tmp_path / "xlatools.lock").read_bytes() == lock_before
    assert snapshot(tree) == tree_before
    assert not [f for f in cache_files(tmp_path) if f.startswith("pin/tmp/")]
    assert f"pin/sha256/{sha(other)}" not in cache_files(tmp_path)


def test_tampered_archive_is_caught_by_verify_refetch(tmp_path, archive_server, pin):
    original = make_tarball(f"xla-{COMMIT}", commit=COMMIT)
    tampered = make_tarball(f"xla-{COMMIT}", {"BUILD": b"# backdoor\n"}, commit=COMMIT)
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", original, tampered)
    assert pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server))).returncode == 0

    plain = pin("verify")  # the cache still holds the good bytes: nothing downloaded
    refetch = pin("verify", "--refetch", "--json")

    assert plain.returncode == 0, plain.stderr
    assert archive_server.total_requests == 2
    assert refetch.returncode == 1
    report = json.loads(refetch.stdout)
    assert report["ok"] is False
    assert any(sha(tampered) in line and sha(original) in line for line in report["disagreements"])
    assert not [f for f in cache_files(tmp_path) if f.startswith("pin/tmp/")]


def test_transfer_cut_midway_leaves_no_partial_files(tmp_path, archive_server, pin):
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}", {"big": bytes(200_000)}), mode="cut")

    result = pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server)))

    assert result.returncode == 3, result.stderr
    assert "could not download" in result.stderr and "attempt 3" in result.stderr
    assert_no_traceback(result)
    assert archive_server.total_requests == 3  # bounded retries
    assert cache_files(tmp_path) == []
    assert not (tmp_path / "xlatools.lock").exists()


def test_ctrl_c_during_download_leaves_no_partial_files(tmp_path, archive_server, pin_env):
    import os

    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}", {"big": bytes(300_000)}), mode="stall")
    profile = xla_profile(tmp_path, archive_server)
    env = dict(os.environ, **pin_env, NO_COLOR="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "xlatools", "pin", "resolve", "--profile", str(profile)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        assert archive_server.half_sent.wait(60), "the download never started"
        deadline = time.monotonic() + 60  # a bound on waiting, not an assertion on speed
        while not [f for f in cache_files(tmp_path) if f.endswith(".part")] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [f for f in cache_files(tmp_path) if f.endswith(".part")], "no partial file while the transfer stalls"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        archive_server.release.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert cache_files(tmp_path) == []
    assert not (tmp_path / "xlatools.lock").exists()


def _member(name: str, kind=tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = 1 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    "member, reason",
    [
        (_member(f"xla-{COMMIT}/../../evil.sh"), "climbs out"),
        (_member("/etc/cron.d/evil"), "absolute member path"),
        (_member("elsewhere/file"), "outside the expected top folder"),
        (_member(f"xla-{COMMIT}/link", tarfile.SYMTYPE, "../../../etc/passwd"), "points outside"),
        (_member(f"xla-{COMMIT}/abs", tarfile.SYMTYPE, "/etc/passwd"), "absolute path"),
    ],
    ids=["dotdot", "absolute", "outside-top", "symlink-escape", "symlink-absolute"],
)
def test_malicious_member_paths_are_refused(tmp_path, archive_server, pin, member, reason):
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}", extra=[member]))

    result = pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server)))

    assert result.returncode == 2, result.stderr
    assert "refusing archive" in result.stderr and reason in result.stderr
    assert_no_traceback(result)
    assert cache_files(tmp_path) == [] and not (tmp_path / "xlatools.lock").exists()


def test_wrong_top_folder_and_wrong_commit_are_refused(tmp_path, archive_server, pin):
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball("xla-main"))
    result = pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server)))
    assert result.returncode == 2 and f"expected top folder 'xla-{COMMIT}/'" in result.stderr, result.stderr

    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}", commit="f" * 40))
    result = pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server)))
    assert result.returncode == 2 and f"commit {'f' * 40}, expected {COMMIT}" in result.stderr, result.stderr


def test_offline_with_an_empty_cache_is_exit_3(tmp_path, archive_server, pin):
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}"))

    result = pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server)), "--offline")

    assert result.returncode == 3
    assert f"offline: no cached archive for xla at {COMMIT}" in result.stderr
    assert "without --offline" in result.stderr or "network access" in result.stderr
    assert_no_traceback(result)
    assert archive_server.total_requests == 0


def test_mirrors_are_tried_in_order_and_redirects_followed(tmp_path, archive_server, pin):
    body = make_tarball(f"xla-{COMMIT}")
    archive_server.serve("/real.tar.gz", body)
    archive_server.serve(f"/moved/{COMMIT}.tar.gz", mode="status", status=302, location="/real.tar.gz")
    missing, moved = archive_server.url("/gone/{commit}.tar.gz"), archive_server.url("/moved/{commit}.tar.gz")
    profile = write_profile(tmp_path, f'  xla:\n    commit: "{COMMIT}"\n    urls: ["{missing}", "{moved}"]\n')

    result = pin("resolve", "--profile", str(profile))

    assert result.returncode == 0, result.stderr
    assert read_lock(tmp_path)["dependencies"]["xla"]["sha256"] == sha(body)
    assert archive_server.requests[f"/gone/{COMMIT}.tar.gz"] == 1  # a 404 is not retried


def test_redirect_to_a_non_http_scheme_is_refused(tmp_path, archive_server, pin):
    archive_server.serve(f"/evil/{COMMIT}.tar.gz", mode="status", status=302, location="file:///etc/passwd")
    profile = xla_profile(tmp_path, archive_server, path="/evil/{commit}.tar.gz")

    result = pin("resolve", "--profile", str(profile))

    assert result.returncode == 3 and "refused redirect to non-http(s) URL 'file:///etc/passwd'" in result.stderr


def test_size_cap(tmp_path, archive_server, pin, pin_env):
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}", {"big": bytes(100_000)}))
    result = pin(
        "resolve",
        "--profile",
        str(xla_profile(tmp_path, archive_server)),
        env={**pin_env, "XLATOOLS_PIN_MAX_BYTES": "100"},
    )
    assert result.returncode == 2 and "over the 100-byte cap" in result.stderr, result.stderr
    assert cache_files(tmp_path) == []


def test_ref_is_resolved_with_git_ls_remote_on_a_local_repo(tmp_path, archive_server, pin, git_repo):
    for commit in (git_repo["head"], git_repo["first"]):
        archive_server.serve(f"/xla/{commit}.tar.gz", make_tarball(f"xla-{commit}"))

    def resolve(ref: str, *flags: str):
        extra = f'    repo: "{git_repo["path"]}"\n    ref: "{ref}"\n'
        profile = write_profile(
            tmp_path, f'  xla:\n    urls: ["{archive_server.url("/xla/{commit}.tar.gz")}"]\n{extra}'
        )
        return pin("resolve", "--profile", str(profile), *flags)

    for ref, expected in (("main", git_repo["head"]), ("v1", git_repo["first"]), ("light", git_repo["head"])):
        result = resolve(ref)
        assert result.returncode == 0, result.stderr
        entry = read_lock(tmp_path)["dependencies"]["xla"]
        assert (entry["ref"], entry["commit"]) == (ref, expected)

    offline = resolve("light", "--offline")  # same ref as the lock: reused without asking git
    assert offline.returncode == 0 and "not re-resolved" in offline.stderr
    missing = resolve("no-such-branch")
    assert missing.returncode == 2 and "ref 'no-such-branch' not found" in missing.stderr
    assert_no_traceback(missing)


def test_profile_without_source_and_missing_lock_are_clear_errors(tmp_path, pin):
    profile = tmp_path / "empty.yaml"
    profile.write_text("description: nothing pinned\n")
    result = pin("resolve", "--profile", str(profile))
    assert result.returncode == 2 and "has no source.xla" in result.stderr
    result = pin("verify")
    assert result.returncode == 2 and "xlatools.lock does not exist" in result.stderr
    assert_no_traceback(result)


def test_jax_xla_and_tensorflow_resolve_together_and_dry_run_writes_nothing(tmp_path, archive_server, pin):
    source = ""
    for name in ("jax", "xla", "tensorflow"):
        archive_server.serve(f"/{name}/{COMMIT}.tar.gz", make_tarball(f"{name}-{COMMIT}"))
        source += (
            f'  {name}:\n    commit: "{COMMIT}"\n    urls: ["{archive_server.url(f"/{name}/{{commit}}.tar.gz")}"]\n'
        )
    profile = write_profile(tmp_path, source)

    dry = pin("resolve", "--profile", str(profile), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["written"] is False and not (tmp_path / "xlatools.lock").exists()

    result = pin("resolve", "--profile", str(profile))
    assert result.returncode == 0, result.stderr
    deps = read_lock(tmp_path)["dependencies"]
    assert list(deps) == ["jax", "xla", "tensorflow"]
    assert {deps[n]["strip_prefix"] for n in deps} == {f"{n}-{COMMIT}" for n in ("jax", "xla", "tensorflow")}
    assert archive_server.total_requests == 3  # the dry run filled the cache


def test_resolve_replaces_an_unreadable_lock_with_a_warning(tmp_path, archive_server, pin):
    archive_server.serve(f"/xla/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}"))
    (tmp_path / "xlatools.lock").write_text('{"lock_version": 0, "dependencies": {}}')
    result = pin("resolve", "--profile", str(xla_profile(tmp_path, archive_server)))
    assert result.returncode == 0 and "lock_version 0 is not supported" in result.stderr
    assert read_lock(tmp_path)["lock_version"] == 2


def test_the_lock_follows_the_profile_but_keeps_a_local_checkout(tmp_path, archive_server, pin, git_repo):
    for name in ("jax", "tensorflow"):
        archive_server.serve(f"/{name}/{COMMIT}.tar.gz", make_tarball(f"{name}-{COMMIT}"))

    def entry(name: str) -> str:
        url = archive_server.url(f"/{name}/{{commit}}.tar.gz")
        return f'  {name}:\n    commit: "{COMMIT}"\n    urls: ["{url}"]\n'

    assert pin("resolve", "--profile", str(write_profile(tmp_path, entry("jax") + entry("tensorflow")))).returncode == 0
    assert pin("local", "--xla", str(git_repo["path"])).returncode == 0

    result = pin("resolve", "--profile", str(write_profile(tmp_path, entry("jax"))))

    assert result.returncode == 0 and "tensorflow: no longer in the profile, dropped" in result.stderr
    deps = read_lock(tmp_path)["dependencies"]
    assert sorted(deps) == ["jax", "xla"] and deps["xla"]["kind"] == "local"
