"""`doctor --profile` checks that the remote cache answers AND keeps what it is given, against real
servers: nginx with a folder its workers can or cannot write, nginx wanting credentials, BuildGrid
with a writable and a read-only action cache, and an executor that does not execute."""

from __future__ import annotations

import importlib.util
import json

from tests.helpers import require

from xlatools.records.build import CredentialRefs, SecretRef
from xlatools.doctor.checks_remote import check_cache
from xlatools.remote.credentials import Credentials, resolve_credentials
from xlatools.vocab import CheckStatus


def doctor_checks(cli, tmp_path, profile_text: str, env: dict | None = None):
    profile = tmp_path / "team.yaml"
    profile.write_text(
        f'build:\n  command: ["true", "{{bazel_startup_options}}"]\n{profile_text}'
    )  # passes the private rc
    done = cli("doctor", "--profile", str(profile), "--json", cwd=tmp_path, env=env, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done, {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def test_an_nginx_folder_its_workers_cannot_write_is_a_failure_with_the_fix(cli, tmp_path, nginx):
    cache = nginx(writable=False)
    done, checks = doctor_checks(cli, tmp_path, f"bazel:\n  remote_cache: {cache.url}\n")
    assert done.returncode == 1
    check = checks["remote cache"]
    assert check["status"] == "fail" and "answered 500" in check["evidence"], check
    assert "writable by nginx's worker user" in check["fix"]
    assert cache.count("PUT", "/cas/", 500) == 1  # the server saw the write and could not keep it


def test_a_writable_nginx_cache_passes(cli, tmp_path, nginx):
    cache = nginx()
    _, checks = doctor_checks(cli, tmp_path, f"bazel:\n  remote_cache: {cache.url}\n")
    assert checks["remote cache"]["status"] == "ok", checks["remote cache"]
    assert cache.count("PUT", "/cas/", 201) == 1 and cache.count("GET", "/cas/", 200) == 1


def test_credentials_decide_and_stay_secret(cli, tmp_path, nginx):
    cache = nginx(basic_auth=("team", "pw-5521-secret"))
    assert check_cache("remote cache", cache.url, Credentials()).status == CheckStatus.FAIL
    anonymous = check_cache("remote cache", cache.url, Credentials())
    assert "answered 401" in anonymous.evidence and "remote_credentials" in anonymous.fix
    profile = f"bazel:\n  remote_cache: {cache.url}\n  remote_credentials:\n    basic_auth: {{env: TEAM_AUTH}}\n"
    done, checks = doctor_checks(cli, tmp_path, profile)
    assert checks["remote credentials"]["status"] == "fail" and "TEAM_AUTH" in checks["remote credentials"]["evidence"]
    done, checks = doctor_checks(cli, tmp_path, profile, env={"TEAM_AUTH": "team:pw-5521-secret"})
    assert checks["remote cache"]["status"] == "ok", checks["remote cache"]
    assert "pw-5521-secret" not in done.stdout + done.stderr


def test_buildgrid_cache_passes_and_a_read_only_action_cache_fails(buildgrid):
    require(
        "buildgrid",
        importlib.util.find_spec("buildgrid.common") is not None,
        "pip install 'xlatools[remote]' (the REAPI client library the gRPC check uses)",
    )
    ok = check_cache("remote cache", buildgrid.url, Credentials())
    assert ok.status == CheckStatus.OK and "action-cache entry" in ok.evidence, ok
    read_only = check_cache("remote cache", buildgrid.url, Credentials(), instance="readonly")
    assert read_only.status == CheckStatus.FAIL and "refuses writes" in read_only.evidence, read_only
    assert "--noremote_upload_local_results" in read_only.fix
    executor = check_cache("remote cache", buildgrid.url, Credentials(), executor=True)
    assert executor.status == CheckStatus.FAIL and "does not execute actions" in executor.evidence


def test_token_header_from_a_file_reaches_the_server(tmp_path, nginx):
    cache = nginx(token="tok-3141")
    (tmp_path / "token").write_text("tok-3141\n")
    refs = CredentialRefs(headers=(("X-Cache-Token", SecretRef(file=str(tmp_path / "token"))),))
    assert check_cache("remote cache", cache.url, resolve_credentials(refs, cache.url)).status == CheckStatus.OK
    assert check_cache("remote cache", cache.url, Credentials()).status == CheckStatus.FAIL
