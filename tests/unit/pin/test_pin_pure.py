"""Pure pieces of `xlatools pin`: SRI, ref picking, member checks, Starlark edits, lock parsing."""

from __future__ import annotations

import tarfile

import pytest

from xlatools.errors import PinError
from xlatools.pin import starlark
from xlatools.pin.archive import member_problem
from xlatools.pin.lock import LOCK_VERSION, parse_lock
from xlatools.pin.refs import pick_commit
from xlatools.pin.sri import hex_to_sri, sri_to_hex

A, B, C = "a" * 40, "b" * 40, "c" * 40


def test_sri_round_trip_and_field_notes_example():
    hex_digest = "36fd883a02fbdabd8c105cf28a973374208a72b17d3849bee9572670d8dd2809"
    assert hex_to_sri(hex_digest) == "sha256-Nv2IOgL72r2MEFzyipczdCCKcrF9OEm+6VcmcNjdKAk="
    for sample in ("0" * 64, "f" * 64, hex_digest):
        assert sri_to_hex(hex_to_sri(sample)) == sample
    with pytest.raises(ValueError):
        sri_to_hex("sha384-abc")
    with pytest.raises(ValueError):
        hex_to_sri("XYZ")


def test_pick_commit_prefers_peeled_tags_then_branches():
    listing = f"{A}\trefs/heads/main\n{B}\trefs/tags/v1\n{C}\trefs/tags/v1^{{}}\n{A}\trefs/heads/v1\n"
    assert pick_commit(listing, "main") == A
    assert pick_commit(listing, "v1") == C  # the commit an annotated tag points at
    assert pick_commit(listing, "refs/heads/v1") == A
    assert pick_commit(listing, "nope") is None


def _info(name, kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    "name, kind, link, ok",
    [
        ("xla-c/a/b.cc", tarfile.REGTYPE, "", True),
        ("xla-c", tarfile.DIRTYPE, "", True),
        ("xla-c/l", tarfile.SYMTYPE, "a/b.cc", True),
        ("xla-c/a/l", tarfile.SYMTYPE, "../x", True),
        ("xla-c/a/l", tarfile.SYMTYPE, "../../x", False),
        ("xla-c/h", tarfile.LNKTYPE, "xla-c/a/b.cc", True),
        ("xla-c/h", tarfile.LNKTYPE, "etc/passwd", False),
        ("/xla-c/x", tarfile.REGTYPE, "", False),
        ("xla-c/../x", tarfile.REGTYPE, "", False),
        ("other/x", tarfile.REGTYPE, "", False),
        ("xla-c/dev", tarfile.CHRTYPE, "", False),
    ],
)
def test_member_problem(name, kind, link, ok):
    assert (member_problem(_info(name, kind, link), "xla-c") is None) == ok


CALL = """x = 1
archive_override(
    module_name = "xla",  # the one we edit
    integrity = "sha256-old",
    urls = ["u1"],
)
archive_override(module_name = "tsl", urls = ["t"])
"""


def test_set_kwarg_replaces_only_the_value_span():
    call = starlark.find_call(CALL, "archive_override", "module_name", "xla")
    text = starlark.apply_edits(CALL, starlark.set_kwarg(CALL, call, "integrity", "sha256-new"))
    assert text == CALL.replace("sha256-old", "sha256-new")
    assert (
        starlark.set_kwarg(
            text, starlark.find_call(text, "archive_override", "module_name", "xla"), "integrity", "sha256-new"
        )
        == []
    )


def test_set_kwarg_lists_and_insertion_keep_style():
    call = starlark.find_call(CALL, "archive_override", "module_name", "xla")
    text = starlark.apply_edits(CALL, starlark.set_kwarg(CALL, call, "urls", ["u2", "u3"]))
    assert '    urls = [\n        "u2",\n        "u3",\n    ],\n)' in text
    call = starlark.find_call(text, "archive_override", "module_name", "xla")
    text = starlark.apply_edits(text, starlark.set_kwarg(text, call, "patch_strip", 1))
    assert "    ],\n    patch_strip = 1,\n)" in text
    one_line = starlark.find_call(text, "archive_override", "module_name", "tsl")
    text = starlark.apply_edits(text, starlark.set_kwarg(text, one_line, "patches", ["p"]))
    assert 'archive_override(module_name = "tsl", urls = ["t"], patches = ["p"])' in text


def test_remove_kwarg_drops_its_whole_line():
    call = starlark.find_call(CALL, "archive_override", "module_name", "xla")
    text = starlark.apply_edits(CALL, starlark.remove_kwarg(CALL, call, "integrity"))
    assert "integrity" not in text and text.count("\n") == CALL.count("\n") - 1


def test_assignments_strings_and_comments_are_not_confused():
    text = '# XLA_COMMIT = "in a comment"\ns = "XLA_COMMIT = \\"x\\""\nXLA_COMMIT = \'abc\'  # trailing\n'
    span = starlark.find_assignment(text, "XLA_COMMIT")
    assert span.of(text) == "'abc'"
    assert starlark.apply_edits(text, starlark.set_assignment(text, "XLA_COMMIT", "def")).endswith(
        "XLA_COMMIT = 'def'  # trailing\n"
    )
    with pytest.raises(starlark.StarlarkSyntaxError):
        starlark.tokenize('x = "unterminated\n')


def test_parse_lock_rejects_other_versions_and_inconsistent_entries():
    with pytest.raises(PinError, match="lock_version 99"):
        parse_lock({"lock_version": 99, "dependencies": {}}, None)
    entry = {"kind": "archive", "commit": A, "sha256": "1" * 64, "integrity": hex_to_sri("2" * 64), "urls": ["u"]}
    with pytest.raises(PinError, match="does not match sha256"):
        parse_lock({"lock_version": LOCK_VERSION, "dependencies": {"xla": entry}}, None)
    entry["integrity"] = hex_to_sri("1" * 64)
    assert parse_lock({"lock_version": LOCK_VERSION, "dependencies": {"xla": entry}}, None).xla.commit == A


def test_insertion_when_the_call_closes_on_the_last_line():
    text = 'http_archive(\n    name = "x",\n    urls = ["a"])\n'
    call = starlark.find_call(text, "http_archive", "name", "x")
    new = starlark.apply_edits(text, starlark.set_kwarg(text, call, "patches", ["p"]))
    assert new == 'http_archive(\n    name = "x",\n    urls = ["a"],\n    patches = ["p"])\n'
    assert starlark.literal(new, starlark.find_call(new, "http_archive", "name", "x").kwarg("patches").value) == ["p"]


def test_default_urls_and_prefixes_follow_upstream_or_a_github_fork():
    from xlatools.pin.resolve import strip_prefix_template, url_templates
    from xlatools.profiles.model import SourceDep

    upstream = SourceDep(commit=A)
    assert url_templates("xla", upstream) == ["https://github.com/openxla/xla/archive/{commit}.tar.gz"]
    assert strip_prefix_template("tensorflow", upstream) == "tensorflow-{commit}"
    fork = SourceDep(commit=A, repo="https://github.com/me/xla-fork.git")
    assert url_templates("xla", fork) == ["https://github.com/me/xla-fork/archive/{commit}.tar.gz"]
    assert strip_prefix_template("xla", fork) == "xla-fork-{commit}"
    mirror = SourceDep(commit=A, urls=["https://m.example/{commit}.tgz"], strip_prefix="src-{commit}")
    assert (url_templates("xla", mirror), strip_prefix_template("xla", mirror)) == (mirror.urls, "src-{commit}")
