"""Pure pieces behind the era table: URL forms read from a tree, {commit[:7]}, item-level list
edits, detection of every era, and the lock's second digest (version 2, version 1 still read)."""

from __future__ import annotations

import pytest

from xlatools.pin import layouts, lists, starlark
from xlatools.pin.forms import archive_for, read_form
from xlatools.pin.lock import LOCK_VERSION, Archive, Lock, LockEntry, MadeFor, parse_lock
from xlatools.pin.sri import hex_to_sri
from xlatools.pin.upstream import expand

C = "0123456789abcdef0123456789abcdef01234567"
D = "89abcdef0123456789abcdef0123456789abcdef"

DERIVED = """def repo():
    tf_http_archive(
        name = "xla",
        sha256 = XLA_SHA256,
        strip_prefix = "openxla-xla-{commit}".format(commit = XLA_COMMIT[:7]),
        urls = tf_mirror_urls("https://api.github.com/repos/openxla/xla/tarball/{commit}".format(commit = XLA_COMMIT)),
    )
"""
LITERAL = f'''http_archive(
    name = "xla",
    sha256 = "{"1" * 64}",
    strip_prefix="xla-{C}",
    urls = [
      "https://mirror.example/xla/{C}.tar.gz",
      "https://github.com/openxla/xla/archive/{C}.tar.gz",
    ],
)
'''


def _call(text):
    return layouts.find_call(text, ("tf_http_archive", "http_archive"), ("name", "xla"))


def test_expand_knows_the_short_commit():
    assert expand("openxla-xla-{commit[:7]}", C) == "openxla-xla-0123456"
    assert expand("https://h/{commit}.tar.gz?x={y}", C) == f"https://h/{C}.tar.gz?x={{y}}"


def test_forms_are_read_from_derived_and_literal_calls():
    derived = read_form(DERIVED, _call(DERIVED), "workspace.bzl")
    assert (derived.urls, derived.strip_prefix, derived.derived) == (
        ("https://api.github.com/repos/openxla/xla/tarball/{commit}",),
        "openxla-xla-{commit[:7]}",
        True,
    )
    literal = read_form(LITERAL, _call(LITERAL), "WORKSPACE")
    assert literal.urls == (
        "https://mirror.example/xla/{commit}.tar.gz",
        "https://github.com/openxla/xla/archive/{commit}.tar.gz",
    )
    assert (literal.strip_prefix, literal.derived) == ("xla-{commit}", False)


def test_archive_for_picks_the_form_and_refuses_a_derived_mismatch():
    api = Archive((f"https://api.github.com/repos/openxla/xla/tarball/{C}",), "a" * 64, f"openxla-xla-{C[:7]}")
    plain = Archive((f"https://github.com/openxla/xla/archive/{C}.tar.gz",), "b" * 64, f"xla-{C}")
    derived = read_form(DERIVED, _call(DERIVED), "workspace.bzl")
    literal = read_form(LITERAL, _call(LITERAL), "WORKSPACE")
    assert archive_for((plain, api), derived, C) is api
    assert archive_for((plain,), derived, C) is None  # the tree would fetch another archive
    assert archive_for((api, plain), literal, C) is plain
    assert archive_for((api,), literal, C) is api  # literal URLs are rewritten with the digest: main archive


def _list_span(text):
    return starlark.find_calls(text, "f")[0].kwarg("x").value


@pytest.mark.parametrize(
    "before, add, drop_ours, after",
    [
        (
            "f(x = [\n    # keep me\n])\n",
            ["//a:xlatools-01.patch"],
            False,
            'f(x = [\n    # keep me\n    "//a:xlatools-01.patch",\n])\n',
        ),
        ('f(x = [\n    # keep me\n    "//a:xlatools-01.patch",\n])\n', [], True, "f(x = [\n    # keep me\n])\n"),
        (
            'f(x = ["//a:theirs.patch"])\n',
            ["//a:xlatools-01.patch"],
            False,
            'f(x = ["//a:theirs.patch", "//a:xlatools-01.patch"])\n',
        ),
        ("f(x = [])\n", ["p"], False, 'f(x = ["p"])\n'),
    ],
)
def test_list_edits_keep_comments_and_foreign_items(before, add, drop_ours, after):
    span = _list_span(before)
    items, _ = lists.list_items(before, span)
    drop = [i for i in items if "xlatools-" in i.value] if drop_ours else []
    assert starlark.apply_edits(before, lists.edit_list(before, span, drop, add)) == after


def test_list_items_sees_comments_and_refuses_non_strings():
    text = 'f(x = [\n    # c\n    "a",  # why\n    "b"\n])\n'
    items, comments = lists.list_items(text, _list_span(text))
    assert [i.value for i in items] == ["a", "b"] and comments
    assert lists.list_items("f(x = [a, b])\n", _list_span("f(x = [a, b])\n")) is None


REVISION = f'XLA_COMMIT = "{C}"\nXLA_SHA256 = "{"1" * 64}"\n'
ERAS = {
    "revision_bzl_api": {"third_party/xla/revision.bzl": REVISION, "third_party/xla/workspace.bzl": DERIVED},
    "revision_bzl": {
        "third_party/xla/revision.bzl": REVISION,
        "third_party/xla/workspace.bzl": DERIVED.replace(
            "api.github.com/repos/openxla/xla/tarball/{commit}", "github.com/openxla/xla/archive/{commit}.tar.gz"
        ),
    },
    "workspace_bzl": {"third_party/xla/workspace.bzl": REVISION + DERIVED},
    "xla_workspace": {"WORKSPACE": LITERAL},
    "tensorflow_workspace": {"WORKSPACE": LITERAL.replace('"xla"', '"org_tensorflow"')},
}


@pytest.mark.parametrize("era", sorted(ERAS))
def test_detection_is_the_table(era):
    texts = {name: ERAS[era].get(name) for name in layouts.CANDIDATE_FILES}
    assert layouts.detect(texts).id == era
    assert layouts.detect(texts) in layouts.LAYOUTS


def test_every_era_is_listed_with_its_dates():
    listed = "\n".join(layouts.looked_for())
    for fact in ("2025-07-21 to 2026-01-27", "2023-03-13 to 2023-08-14", "until 2023-03-13", "2023-08-14"):
        assert fact in listed
    assert layouts.detect({name: None for name in layouts.CANDIDATE_FILES}) is None


def test_lock_version_2_round_trips_other_archives_and_made_for_and_reads_version_1():
    other = Archive((f"https://github.com/openxla/xla/archive/{C}.tar.gz",), "b" * 64, f"xla-{C}")
    entry = LockEntry(
        name="xla",
        kind="archive",
        commit=C,
        urls=("u",),
        sha256="a" * 64,
        integrity=hex_to_sri("a" * 64),
        strip_prefix=f"openxla-xla-{C[:7]}",
        other_archives=(other,),
    )
    lock = Lock(None, {"xla": entry}, made_for=MadeFor(D, "revision_bzl_api"))
    data = lock.to_json()
    assert data["lock_version"] == LOCK_VERSION == 2
    assert data["dependencies"]["xla"]["other_archives"][0]["integrity"] == hex_to_sri("b" * 64)
    again = parse_lock(data, None)
    assert again.xla.archives == (Archive(("u",), "a" * 64, f"openxla-xla-{C[:7]}"), other)
    assert again.made_for == MadeFor(D, "revision_bzl_api") and again.jax_commit == D
    data["dependencies"]["xla"]["other_archives"][0]["integrity"] = hex_to_sri("c" * 64)
    with pytest.raises(Exception, match="other_archives: integrity"):
        parse_lock(data, None)
    old = {
        "lock_version": 1,
        "dependencies": {
            "xla": {
                "kind": "archive",
                "commit": C,
                "sha256": "a" * 64,
                "integrity": hex_to_sri("a" * 64),
                "urls": ["u"],
            }
        },
    }
    assert parse_lock(old, None).xla.other_archives == () and parse_lock(old, None).made_for is None
