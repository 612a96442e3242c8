"""`xlatools pin` on the eras the first layouts missed: the API-tarball URL form (and its two-digest
days), the WORKSPACE `http_archive(name = "xla")` era, the commented patch_file placeholder; and a
tree that disagrees with itself, locks made for another JAX commit, hand edits, --json errors."""

from __future__ import annotations

import json

import pytest
from tests.integration.pin.helpers import (
    COMMIT,
    MODULE_BAZEL,
    OLD_COMMIT,
    OLD_SHA,
    REVISION_BZL,
    WORKSPACE_BZL_PLACEHOLDER,
    WORKSPACE_XLA_2023,
    make_tarball,
    make_tree,
    sha,
    snapshot,
    workspace_bzl_api,
    write_profile,
)
from tests.integration.pin.test_pin_apply import NEW_SHA, PATCH, XLA_URL, archive_entry, make_lock

from xlatools.errors import PinError
from xlatools.pin.apply import apply_lock
from xlatools.pin.lock import Archive, LockEntry, MadeFor, PatchEntry, load_lock
from xlatools.pin.sri import hex_to_sri
from xlatools.pin.verify import verify_tree

API_URL = f"https://api.github.com/repos/openxla/xla/tarball/{COMMIT}"
API_SHA = "a" * 64  # the API tarball's digest differs from the /archive/ one


def api_entry(*others: Archive, patches=()) -> LockEntry:
    return LockEntry(
        name="xla",
        kind="archive",
        commit=COMMIT,
        urls=(API_URL,),
        sha256=API_SHA,
        integrity=hex_to_sri(API_SHA),
        strip_prefix=f"openxla-xla-{COMMIT[:7]}",
        patches=tuple(patches),
        other_archives=others,
    )


def test_placeholder_patch_list_is_no_patches_and_keeps_its_comment(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "placeholder")
    make_lock(tmp_path, archive_entry())
    workspace = tree / "third_party/xla/workspace.bzl"

    assert pin("apply", "--source", str(tree)).returncode == 0
    assert workspace.read_text() == WORKSPACE_BZL_PLACEHOLDER  # no edit upstream would not make
    assert pin("verify", "--source", str(tree)).returncode == 0  # no false alarm on the placeholder

    patched = make_lock(tmp_path, archive_entry(patches=[PatchEntry("fix.patch", sha(PATCH))]), patch=PATCH)
    apply_lock(patched, tree)
    text = workspace.read_text()
    assert (
        "        patch_file = [\n            # fixture: patches for XLA go in this list\n"
        '            "//third_party/xla:xlatools-01-fix.patch",\n        ],\n'
    ) in text
    assert verify_tree(patched, tree) == []

    apply_lock(make_lock(tmp_path, archive_entry()), tree)
    assert workspace.read_text() == WORKSPACE_BZL_PLACEHOLDER  # back to the placeholder, comment and all


def test_api_tarball_era_refuses_an_archive_url_lock_and_takes_an_api_one(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "revision_bzl_api")
    make_lock(tmp_path, archive_entry())  # resolved with the default /archive/ URL: wrong digest for this tree
    before = snapshot(tree)

    refused = pin("apply", "--source", str(tree))
    assert refused.returncode == 2, refused.stderr
    assert "is not the one this tree fetches" in refused.stderr and API_URL in refused.stderr
    assert "--source" in refused.stderr  # the hint: resolve against the tree
    assert snapshot(tree) == before
    wrong = pin("verify", "--source", str(tree))
    assert wrong.returncode == 1 and f"fetches {API_URL}" in wrong.stderr

    make_lock(tmp_path, api_entry())
    applied = pin("apply", "--source", str(tree), "--json")
    assert applied.returncode == 0, applied.stderr
    out = json.loads(applied.stdout)
    assert out["layout"] == "revision_bzl_api" and out["warnings"] == []
    assert (tree / "third_party/xla/revision.bzl").read_text() == REVISION_BZL.replace(OLD_COMMIT, COMMIT).replace(
        OLD_SHA, API_SHA
    )
    assert (tree / "third_party/xla/workspace.bzl").read_text() == workspace_bzl_api()
    assert pin("verify", "--source", str(tree)).returncode == 0


def test_two_digest_days_each_file_gets_its_forms_digest(tmp_path):
    tree = make_tree(tmp_path / "jax", "revision_bzl_api")
    (tree / "MODULE.bazel").write_text(MODULE_BAZEL)
    archive = Archive((XLA_URL,), NEW_SHA, f"xla-{COMMIT}")
    lock = make_lock(tmp_path, api_entry(archive))
    assert load_lock(lock.path).xla.other_archives == (archive,)  # the lock can say both

    apply_lock(lock, tree)

    assert f'XLA_SHA256 = "{API_SHA}"' in (tree / "third_party/xla/revision.bzl").read_text()
    module = (tree / "MODULE.bazel").read_text()
    assert f'integrity = "{hex_to_sri(NEW_SHA)}",  # keep' in module and f'urls = ["{XLA_URL}"]' in module
    assert verify_tree(lock, tree) == []


def test_resolve_with_source_fetches_what_the_tree_fetches(tmp_path, archive_server, pin):
    tree = make_tree(tmp_path / "jax", "revision_bzl_api")
    (tree / "third_party/xla/workspace.bzl").write_text(workspace_bzl_api(archive_server.base))
    (tree / "MODULE.bazel").write_text(
        MODULE_BAZEL.replace("https://github.com/openxla/xla/archive", archive_server.url("/openxla/xla/archive"))
    )
    api_body = make_tarball(f"openxla-xla-{COMMIT[:7]}", commit=COMMIT)
    archive_body = make_tarball(f"xla-{COMMIT}", commit=COMMIT)
    archive_server.serve(f"/repos/openxla/xla/tarball/{COMMIT}", api_body)
    archive_server.serve(f"/openxla/xla/archive/{COMMIT}.tar.gz", archive_body)
    profile = write_profile(tmp_path, f"  xla:\n    commit: {COMMIT}\n")

    result = pin("resolve", "--profile", str(profile), "--source", str(tree))

    assert result.returncode == 0, result.stderr
    lock = load_lock(tmp_path / "xlatools.lock")
    assert (lock.xla.urls, lock.xla.sha256) == (
        (archive_server.url(f"/repos/openxla/xla/tarball/{COMMIT}"),),
        sha(api_body),
    )
    assert lock.xla.strip_prefix == f"openxla-xla-{COMMIT[:7]}"
    assert [(a.sha256, a.strip_prefix) for a in lock.xla.other_archives] == [(sha(archive_body), f"xla-{COMMIT}")]
    assert lock.made_for == MadeFor(None, "revision_bzl_api")
    assert pin("apply", "--source", str(tree)).returncode == 0
    assert pin("verify", "--source", str(tree)).returncode == 0


def test_workspace_xla_era_just_works(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "xla_workspace")
    make_lock(tmp_path, archive_entry())
    applied = pin("apply", "--source", str(tree), "--json")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["layout"] == "xla_workspace"
    assert (tree / "WORKSPACE").read_text() == WORKSPACE_XLA_2023.replace(OLD_COMMIT, COMMIT).replace(OLD_SHA, NEW_SHA)
    assert pin("verify", "--source", str(tree)).returncode == 0


def test_verify_says_when_the_tree_disagrees_with_itself(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    revision = tree / "third_party/xla/revision.bzl"
    revision.write_text(REVISION_BZL.replace(OLD_COMMIT, COMMIT).replace(OLD_SHA, NEW_SHA))  # MODULE.bazel left behind
    make_lock(tmp_path, archive_entry())

    result = pin("verify", "--source", str(tree))

    assert result.returncode == 1
    assert (
        f"the tree itself is inconsistent: third_party/xla/revision.bzl pins {COMMIT}, "
        f"MODULE.bazel pins {OLD_COMMIT}; the lock ({COMMIT}) matches third_party/xla/revision.bzl"
    ) in result.stderr
    assert pin("apply", "--source", str(tree)).returncode == 0
    assert pin("verify", "--source", str(tree)).returncode == 0


@pytest.fixture
def git_tree(tmp_path, git_repo):
    """A git checkout with a today's-layout JAX tree committed in it."""
    tree = make_tree(git_repo["path"], "revision_bzl")
    git_repo["git"]("add", "-A")
    git_repo["git"]("commit", "-q", "-m", "jax tree")
    return tree, git_repo


def test_apply_warns_when_the_lock_was_made_for_another_jax_commit(tmp_path, pin, git_tree):
    tree, repo = git_tree
    lock = make_lock(tmp_path, archive_entry())
    lock.path.write_text(
        lock.render().replace(
            '"made_for": null', json.dumps({"made_for": {"jax_commit": repo["first"], "layout": "workspace_bzl"}})[1:-1]
        )
    )

    result = pin("apply", "--source", str(tree))

    assert result.returncode == 0, result.stderr
    assert f"the lock was made for JAX {repo['first']}" in result.stderr
    assert f"checkout {repo['first'][:12]}" in result.stderr and "pin resolve --profile P --source" in result.stderr
    assert "resolved against a workspace_bzl tree" in result.stderr


def test_hand_edits_are_listed_and_refused_without_force(tmp_path, pin, git_tree):
    tree, _ = git_tree
    make_lock(tmp_path, archive_entry())
    revision = tree / "third_party/xla/revision.bzl"
    revision.write_text(revision.read_text().replace(OLD_COMMIT, "c" * 40))  # a hand-set XLA_COMMIT
    edited = snapshot(tree)

    refused = pin("apply", "--source", str(tree), "--json")

    assert refused.returncode == 2
    error = json.loads(refused.stdout)["error"]
    assert "uncommitted edits that apply would replace" in error["message"]
    assert any(p.startswith("third_party/xla/revision.bzl: ") and "c" * 40 in p for p in error["problems"])
    assert snapshot(tree) == edited

    forced = pin("apply", "--source", str(tree), "--force")
    assert forced.returncode == 0 and "replaces uncommitted edits in third_party/xla/revision.bzl" in forced.stderr
    # Our own edits are not hand edits: a new lock applies over them without --force.
    make_lock(
        tmp_path, LockEntry(**{**archive_entry().__dict__, "sha256": "4" * 64, "integrity": hex_to_sri("4" * 64)})
    )
    again = pin("apply", "--source", str(tree))
    assert again.returncode == 0, again.stderr
    assert '"' + "4" * 64 + '"' in revision.read_text()


def test_json_errors_go_to_stdout(tmp_path, pin):
    (tmp_path / "empty").mkdir()
    make_lock(tmp_path, archive_entry())
    result = pin("apply", "--source", str(tmp_path / "empty"), "--json")
    assert result.returncode == 2
    out = json.loads(result.stdout)
    assert (
        out["ok"] is False
        and out["error"]["exit_code"] == 2
        and "unrecognised JAX tree layout" in out["error"]["message"]
    )
    assert any("xla_workspace" in p for p in out["error"]["problems"])
    missing = pin("verify", "--lock", str(tmp_path / "nope.lock"), "--json")
    assert missing.returncode == 2 and json.loads(missing.stdout)["error"]["type"] == "PinError"


def test_api_lock_on_a_placeholder_tree_is_refused_by_apply(tmp_path):
    tree = make_tree(tmp_path / "jax", "placeholder")
    with pytest.raises(PinError, match="not the one this tree fetches"):
        apply_lock(make_lock(tmp_path, api_entry()), tree)


def test_the_docs_example_profile_is_valid():
    from pathlib import Path

    from tests.helpers import run_cli

    example = Path(__file__).resolve().parents[3] / "docs" / "examples" / "bug.yaml"
    result = run_cli("profiles", "validate", str(example))
    assert result.returncode == 0, result.stdout + result.stderr


def test_resolve_with_source_records_the_jax_commit_it_was_made_against(tmp_path, archive_server, pin, git_tree):
    tree, repo = git_tree
    for name in ("third_party/xla/workspace.bzl", "MODULE.bazel"):
        path = tree / name
        path.write_text(
            path.read_text().replace(
                "https://github.com/openxla/xla/archive", archive_server.url("/openxla/xla/archive")
            )
        )
    repo["git"]("commit", "-q", "-am", "a mirror of our own")
    archive_server.serve(f"/openxla/xla/archive/{COMMIT}.tar.gz", make_tarball(f"xla-{COMMIT}", commit=COMMIT))
    profile = write_profile(tmp_path, f"  xla:\n    commit: {COMMIT}\n")

    result = pin("resolve", "--profile", str(profile), "--source", str(tree))

    assert result.returncode == 0, result.stderr
    lock = load_lock(tmp_path / "xlatools.lock")
    assert lock.made_for == MadeFor(repo["git"]("rev-parse", "HEAD"), "revision_bzl")
    assert lock.xla.other_archives == ()  # workspace.bzl and MODULE.bazel fetch the same archive
    assert archive_server.total_requests == 1
    applied = pin("apply", "--source", str(tree))
    assert applied.returncode == 0 and "made for JAX" not in applied.stderr
