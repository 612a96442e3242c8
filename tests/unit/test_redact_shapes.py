"""Redaction by shape (credentials inside any string) and of printed text, besides redaction by name."""

from __future__ import annotations

import io

import pytest

from xlatools.redact import REDACTED, RedactingStream, redact, redact_argv, redact_text


@pytest.mark.parametrize(
    "text,secret",
    [
        ("https://alice:s3cret@db.internal/x", "s3cret"),
        ("https://ghp_TOKENVALUE@github.example/x.git", "ghp_TOKENVALUE"),
        ("--xla_dump_hlo_pass_re=https://bob:s3cret@h.test", "s3cret"),
        ("https://h.test/cb?token=s3cret&x=1", "s3cret"),
        ("user=a,password=s3cret", "s3cret"),
        ("--api_key=s3cret", "s3cret"),
        ("X-Amz-Signature=s3cret", "s3cret"),
        ("Authorization: Bearer s3cret", "s3cret"),
        ("x-team-cache-token: s3cret", "s3cret"),
        ("curl -H 'Authorization: Basic czNjcmV0OnBhc3M='", "czNjcmV0OnBhc3M="),
        ('{"API_TOKEN": "s3cret", "plain": "x"}', "s3cret"),
        ("env:\n  DB_PASSWORD: s3cret\n", "s3cret"),
        ("--xla_dump_hlo_module_re=bob:s3cret@cache.internal", "s3cret"),  # user:password@ without a scheme
        ("--xla_gpu_cuda_data_dir=/opt/u:s3cret@cuda", "s3cret"),  # ... inside a path
        ("/data/u:s3cret@store/x and :u2:s3cret@h", "s3cret"),
    ],
)
def test_credentials_are_hidden_by_their_shape(text, secret):
    out = redact_text(text)
    assert secret not in out and REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "/tmp/out/20260101T000000Z-prog-abcdef/xla_dump/module_0001.jit_f.before_optimizations.txt",
        "--xla_dump_hlo_pass_re=.*",
        "GIT_AUTHOR_NAME=bob",
        "author=bob",
        '"signature": "libstdcxx-old"',
        '"key": "run.env.DB_PASSWORD"',
        "description: a token-based scheme",
        "user@example.com",
        "git@github.com:org/repo.git",
        "at 12:30@noon",
        "nvidia/cuda:12.3.1-devel@sha256:0123abcd",
        "python:3.11-slim@sha256:0123abcd",
    ],
)
def test_ordinary_text_stays(text):
    assert redact_text(text) == text


def test_argv_hides_the_value_after_an_option_named_like_a_secret():
    assert redact_argv(["prog.py", "--api-key", "s3cret", "--steps", "3"]) == [
        "prog.py",
        "--api-key",
        REDACTED,
        "--steps",
        "3",
    ]
    assert redact_argv(["--token=s3cret"]) == [f"--token={REDACTED}"]


def test_records_hide_rows_that_name_a_secret_and_flags_used_as_keys():
    row = redact({"key": "API_TOKEN", "kind": "removed", "a": "s3cret", "b": None})
    assert row == {"key": "API_TOKEN", "kind": "removed", "a": REDACTED, "b": None}
    sources = redact({"xla_flag_sources": {"--xla_x=https://u:s3cret@h": "--xla-flag"}})
    assert "s3cret" not in str(sources)
    assert redact({"program": {"args": ("--password", "s3cret")}})["program"]["args"] == ["--password", REDACTED]


def test_redaction_is_idempotent():
    text = "https://u:p@h?token=t Authorization: Bearer abcdefgh"
    assert redact_text(redact_text(text)) == redact_text(text)


def test_printed_text_is_redacted_but_bytes_pass():
    raw = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    stream = RedactingStream(raw)
    stream.write("DB_URL=https://u:s3cret@h\n")
    stream.buffer.write(b"program output https://u:own@h\n")
    written = raw.buffer.getvalue().decode()
    assert "s3cret" not in written and "own@h" in written
    with pytest.raises(TypeError):
        stream.write(b"bytes")


def test_a_record_named_like_a_secret_keeps_its_own_fields():
    manifest = {"name": "token-refresh-test", "status": "ok", "platform": "cpu", "env_changes": []}
    assert redact(manifest) == manifest
