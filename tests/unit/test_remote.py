"""Remote caches and executors, the pure parts: profile validation, rendered options, build plans
with credentials (references only), the one credential resolver, scrubbing, bazel's process counts."""

from __future__ import annotations

import os

import pytest

from tests.unit.test_build_plan import options, write_profile
from xlatools.bazelrc import render
from xlatools.builder.plan import C_GOOGLE_CREDENTIALS, C_SECRETS, plan_build
from xlatools.errors import EnvironmentMissing, ProfileError, UsageError
from xlatools.profiles import load
from xlatools.records.build import CredentialRefs, SecretRef
from xlatools.redact import REDACTED, redact_argv, redact_text, redact_values
from xlatools.remote.credentials import Credentials, private_rc, private_rc_text, resolve_credentials, with_basic_auth
from xlatools.remote.stats import parse_process_counts

TEAM = (
    "extends: dbg-cpu\nbazel:\n  remote_cache: https://cache.example/jax\n  remote_credentials:\n"
    "    basic_auth: {env: TEAM_AUTH}\n    headers:\n      Authorization: {file: token.txt}\n"
    "    google_credentials: sa.json\n"
)


def test_remote_executor_instance_and_platform_properties_render(tmp_path):
    path = write_profile(
        tmp_path,
        "rbe",
        "bazel:\n  remote_executor: grpcs://rbe.example:443\n"
        "  remote_instance_name: main\n  remote_platform_properties: {OSFamily: Linux, cores: 8}\n",
    )
    text = render(load(path))
    assert "build:xlatools --remote_executor=grpcs://rbe.example:443" in text
    assert "build:xlatools --remote_instance_name=main" in text
    assert "build:xlatools --remote_default_exec_properties=OSFamily=Linux" in text
    assert "build:xlatools --remote_default_exec_properties=cores=8" in text


@pytest.mark.parametrize(
    "bazel, message",
    [
        ("remote_cache: https://u:pw@cache.example", "credentials do not belong in a profile"),
        ("extra_options: ['--remote_header=Authorization=Bearer x']", "--remote_header carries a secret"),
        ("extra_options: ['--remote_cache=grpc://u:pw@h:1']", "credentials do not belong in a profile"),
        ("remote_cache: grpc://h:1\n  remote_credentials: {basic_auth: {env: A}}", "is for an http(s):// remote_cache"),
        ("remote_credentials: {headers: {A: {env: X, file: y}}}", "exactly one of env"),
        ("remote_executor: http://h:1", "expected a value matching"),
        (
            "build:\n  command: [bazel, build, '--remote_header=Authorization=Bearer u:pw']\n",
            "--remote_header carries a secret",
        ),
        (
            "build:\n  command: [bazel, build, '--remote_cache=https://u:pw@h']\n",
            "credentials do not belong in a profile",
        ),
    ],
)
def test_profiles_with_secrets_or_bad_remote_settings_are_refused(tmp_path, bazel, message):
    path = write_profile(tmp_path, "bad", f"bazel:\n  {bazel}\n" if not bazel.startswith("build") else bazel)
    with pytest.raises(ProfileError) as caught:
        load(path)
    rendered = "\n".join(p.render() for p in caught.value.problems)
    assert message in rendered
    assert "u:pw" not in rendered  # the value is not echoed back


def test_plan_carries_references_and_a_private_rc_never_values(tmp_path):
    path = write_profile(tmp_path, "team", TEAM)
    local = plan_build(load(path), options(local=True, secrets_root=tmp_path / "secrets"))
    assert local.credentials == CredentialRefs(
        basic_auth=SecretRef(env="TEAM_AUTH"),
        headers=(("Authorization", SecretRef(file=str(tmp_path / "token.txt"))),),
        google_credentials=str(tmp_path / "sa.json"),
    )
    assert local.private_rc == str(tmp_path / "secrets" / "0123abcd" / "remote.bazelrc")
    assert f"--bazel_startup_options=--bazelrc={local.private_rc}" in local.argv
    assert "remote_credentials" not in local.bazelrc and "--remote_header" not in local.bazelrc
    container = plan_build(load(path), options(secrets_root=tmp_path / "secrets"))
    assert f"--bazel_startup_options=--bazelrc={C_SECRETS}/remote.bazelrc" in container.argv
    mounts = {m.target: m for m in container.mounts}
    assert mounts[C_SECRETS].read_only and mounts[C_SECRETS].source == str(tmp_path / "secrets" / "0123abcd")
    assert mounts[C_GOOGLE_CREDENTIALS].source == str(tmp_path / "sa.json")


def test_a_build_command_must_take_the_startup_options(tmp_path):
    write_profile(tmp_path, "team", TEAM)
    path = write_profile(
        tmp_path, "custom", "extends: team\nbuild:\n  command: [bazel, build, '{bazel_options}', //:x]\n"
    )
    with pytest.raises(UsageError, match="bazel_startup_options"):
        plan_build(load(path), options())
    path = write_profile(
        tmp_path,
        "ok",
        "extends: team\nbuild:\n  command: [bazel, '{bazel_startup_options}', build, '{bazel_options}', //:x]\n",
    )
    assert plan_build(load(path), options()).argv[:2] == ("bazel", f"--bazelrc={C_SECRETS}/remote.bazelrc")


def test_resolve_reads_env_and_files_and_names_what_is_missing(tmp_path):
    (tmp_path / "token").write_text("Bearer abc 123\nignored\n")
    (tmp_path / "sa.json").write_text("{}")
    refs = CredentialRefs(
        basic_auth=SecretRef(env="TEAM_AUTH"),
        headers=(("Authorization", SecretRef(file=str(tmp_path / "token"))),),
        google_credentials=str(tmp_path / "sa.json"),
    )
    with pytest.raises(EnvironmentMissing, match="TEAM_AUTH is not set"):
        resolve_credentials(refs, "https://cache.example/jax", env={})
    with pytest.raises(UsageError, match="not user:password"):
        resolve_credentials(refs, "https://cache.example/jax", env={"TEAM_AUTH": "nocolon"})
    creds = resolve_credentials(refs, "https://cache.example/jax", env={"TEAM_AUTH": "me:p@ss/w"})
    assert creds.basic_auth == ("me", "p@ss/w") and creds.headers == {"Authorization": "Bearer abc 123"}
    assert "--remote_cache=https://me:p%40ss%2Fw@cache.example/jax" in creds.options
    rc = private_rc_text(creds, "xlatools", google_path="/in/container.json")
    assert "build:xlatools '--remote_header=Authorization=Bearer abc 123'" in rc  # quoted for bazel's rc parser
    assert "build:xlatools --google_credentials=/in/container.json" in rc
    line = "INFO: rc: --remote_cache=https://me:p%40ss%2Fw@cache.example/jax '--remote_header=Authorization=Bearer abc 123'"
    cleaned = redact_values(line, creds.secrets)
    assert "p@ss" not in cleaned and "p%40ss" not in cleaned and "abc 123" not in cleaned, cleaned
    assert f"--remote_cache={REDACTED}" in cleaned  # the URL with its password hidden whole
    with pytest.raises(EnvironmentMissing, match="none does not exist; bazel.remote_credentials.headers.A names it"):
        resolve_credentials(CredentialRefs(headers=(("A", SecretRef(file=str(tmp_path / "none"))),)), None, env={})
    for name in ("Authorization", "Cookie"):  # the key path never reads as a header whose value is redacted
        with pytest.raises(EnvironmentMissing) as missing:
            resolve_credentials(CredentialRefs(headers=((name, SecretRef(file=str(tmp_path / "none"))),)), None, env={})
        assert redact_text(missing.value.message) == missing.value.message
    assert resolve_credentials(None, None).options == ()
    os.mkfifo(tmp_path / "fifo")  # never opened (it would block): refused by name
    with pytest.raises(UsageError, match="fifo is not a regular file"):
        resolve_credentials(CredentialRefs(headers=(("A", SecretRef(file=str(tmp_path / "fifo"))),)), None, env={})
    (tmp_path / "token").chmod(0o644)  # others may read it: a warning naming the file, never the secret
    [note] = resolve_credentials(refs, "https://cache.example/jax", env={"TEAM_AUTH": "me:pw"}).warnings
    assert "token can be read by others (mode 644; " in note and "abc" not in note
    (tmp_path / "token").chmod(0o600)
    assert resolve_credentials(refs, "https://cache.example/jax", env={"TEAM_AUTH": "me:pw"}).warnings == ()


def test_basic_auth_url():
    assert with_basic_auth("http://127.0.0.1:8080/x", "u:p w") == "http://u:p%20w@127.0.0.1:8080/x"


def test_process_counts_of_bazel_4_and_newer_summaries():
    counts = parse_process_counts(
        [
            "INFO: 3 processes: 2 remote cache hit, 1 internal.",
            "INFO: 9 processes: 1 disk cache hit, 4 remote cache hit, 2 internal, 2 linux-sandbox.",
            "INFO: 1 process: 1 internal.",
        ]
    )
    assert counts.total == 13 and counts.by_kind["remote cache hit"] == 6 and counts.by_kind["internal"] == 4
    assert (counts.cache_hits, counts.actions, counts.hit_share) == (7, 9, 0.7778)
    assert parse_process_counts(["nothing"]) is None
    assert parse_process_counts(["INFO: 2 processes: 2 internal."]).hit_share is None


def test_private_rc_lives_as_long_as_the_build_in_a_private_folder(tmp_path):
    rc = tmp_path / "root" / "run" / "remote.bazelrc"
    with private_rc(str(rc), Credentials(options=("--remote_header=A=b",)), "xlatools"):
        assert os.stat(rc).st_mode & 0o777 == 0o600 and os.stat(rc.parent).st_mode & 0o777 == 0o700
        assert "build:xlatools --remote_header=A=b" in rc.read_text()
    assert not rc.parent.exists()
    with pytest.raises(KeyboardInterrupt), private_rc(str(rc), Credentials(options=("--remote_header=A=b",)), "x"):
        raise KeyboardInterrupt  # Ctrl-C during the build: removed all the same
    assert not rc.parent.exists()
    with private_rc(str(rc), Credentials(), "xlatools"):  # no credentials: nothing written
        assert not rc.parent.exists()


def test_argv_shows_bazel_credentials_hidden():
    argv = [
        "bazel",
        "build",
        "--remote_header=Authorization=Bearer tok123",
        "--remote_cache=https://u:pw@h:1/c",
        "--remote_exec_header=tok",
        "grpcs://u:pw@h:2",
        "--remote_cache=https://h:1/c",
        "a@b",
    ]
    assert redact_argv(argv) == [
        "bazel",
        "build",
        f"--remote_header=Authorization={REDACTED}",
        f"--remote_cache=https://{REDACTED}@h:1/c",
        f"--remote_exec_header={REDACTED}",
        f"grpcs://{REDACTED}@h:2",
        "--remote_cache=https://h:1/c",
        "a@b",
    ]
