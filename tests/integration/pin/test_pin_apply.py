"""`xlatools pin apply` / `verify` / `local` on JAX trees in the three upstream layouts."""

from __future__ import annotations

import json
import re

import pytest
from tests.integration.pin.helpers import (
    COMMIT,
    MODULE_BAZEL,
    OLD_COMMIT,
    OLD_SHA,
    REVISION_BZL,
    WORKSPACE_2022,
    WORKSPACE_BZL_2024,
    WORKSPACE_BZL_LOADING,
    make_tree,
    sha,
    snapshot,
)

from xlatools.builder.tree import lock_local_xla
from xlatools.errors import PinError
from xlatools.pin.apply import apply_lock
from xlatools.pin.lock import Lock, LockEntry, PatchEntry, load_lock, write_lock
from xlatools.pin.sri import hex_to_sri, sri_to_hex
from xlatools.pin.verify import verify_tree

NEW_SHA = "36fd883a02fbdabd8c105cf28a973374208a72b17d3849bee9572670d8dd2809"  # jax-ml/jax revision.bzl at cec06d1
XLA_URL = f"https://github.com/openxla/xla/archive/{COMMIT}.tar.gz"
MIRROR = f"https://mirror.example/xla/{COMMIT}.tar.gz"
TF_URL = f"https://github.com/tensorflow/tensorflow/archive/{COMMIT}.tar.gz"
PATCH = b"--- a/xla/BUILD\n+++ b/xla/BUILD\n@@ -1 +1 @@\n-old\n+new\n"


def archive_entry(name: str = "xla", urls=(XLA_URL,), patches=()) -> LockEntry:
    return LockEntry(
        name=name,
        kind="archive",
        commit=COMMIT,
        urls=tuple(urls),
        sha256=NEW_SHA,
        integrity=hex_to_sri(NEW_SHA),
        strip_prefix=f"{name}-{COMMIT}",
        patches=tuple(patches),
        resolved_at="2026-11-22T00:00:00Z",
    )


def make_lock(tmp_path, *entries: LockEntry, patch: bytes | None = None) -> Lock:
    if patch is not None:
        (tmp_path / "fix.patch").write_bytes(patch)
    lock = Lock(tmp_path / "xlatools.lock", {e.name: e for e in entries})
    write_lock(lock)
    return load_lock(lock.path)


def test_today_layout_updates_revision_bzl_and_module_bazel_minimally(tmp_path):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    lock = make_lock(tmp_path, archive_entry(urls=(XLA_URL, MIRROR)))

    result = apply_lock(lock, tree)

    assert result.layout == "revision_bzl"
    assert sorted(p.name for p in result.changed) == ["MODULE.bazel", "revision.bzl"]
    assert (tree / "third_party/xla/revision.bzl").read_text() == REVISION_BZL.replace(OLD_COMMIT, COMMIT).replace(
        OLD_SHA, NEW_SHA
    )
    module = (tree / "MODULE.bazel").read_text()
    xla_block_before = MODULE_BAZEL.split('bazel_dep(name = "tsl")')[0]
    expected = (
        xla_block_before.replace(OLD_COMMIT, COMMIT, 1)
        .replace("sha256-ERERERERERERERERERERERERERERERERERERERERERE=", hex_to_sri(NEW_SHA))
        .replace(
            f'    urls = ["https://github.com/openxla/xla/archive/{OLD_COMMIT}.tar.gz"],',
            f'    urls = [\n        "{XLA_URL}",\n        "{MIRROR}",\n    ],',
        )
    )
    assert module.startswith(expected), module
    assert "# keep" in module  # comments on edited lines survive
    assert module.endswith(MODULE_BAZEL[MODULE_BAZEL.index('bazel_dep(name = "tsl")') :])  # other override untouched
    assert (tree / "third_party/xla/workspace.bzl").read_text() == WORKSPACE_BZL_LOADING


def test_sri_and_hex_always_agree_after_apply(tmp_path):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    apply_lock(make_lock(tmp_path, archive_entry()), tree)
    hex_digest = re.search(r'XLA_SHA256 = "([0-9a-f]{64})"', (tree / "third_party/xla/revision.bzl").read_text())[1]
    sri = re.search(r'integrity = "(sha256-[^"]+)"', (tree / "MODULE.bazel").read_text())[1]
    assert sri_to_hex(sri) == hex_digest == NEW_SHA
    assert sri == "sha256-Nv2IOgL72r2MEFzyipczdCCKcrF9OEm+6VcmcNjdKAk="  # MODULE.bazel integrity at jax-ml/jax cec06d1


def test_2024_layout_edits_workspace_bzl_only(tmp_path):
    tree = make_tree(tmp_path / "jax", "workspace_bzl")
    result = apply_lock(make_lock(tmp_path, archive_entry()), tree)
    assert result.layout == "workspace_bzl"
    assert (tree / "third_party/xla/workspace.bzl").read_text() == WORKSPACE_BZL_2024.replace(
        OLD_COMMIT, COMMIT
    ).replace(OLD_SHA, NEW_SHA)
    assert [p.name for p in result.changed] == ["workspace.bzl"]


def test_2022_layout_edits_the_tensorflow_http_archive(tmp_path):
    tree = make_tree(tmp_path / "jax", "tensorflow_workspace")
    result = apply_lock(make_lock(tmp_path, archive_entry("tensorflow", urls=(TF_URL,))), tree)
    assert result.layout == "tensorflow_workspace"
    # Only the pinned values change; the commented-out local_repository and the rest stay.
    assert (tree / "WORKSPACE").read_text() == WORKSPACE_2022.replace(OLD_COMMIT, COMMIT).replace(OLD_SHA, NEW_SHA)


@pytest.mark.parametrize("layout", ["revision_bzl", "workspace_bzl", "tensorflow_workspace"])
def test_apply_is_idempotent_and_verify_agrees(tmp_path, layout):
    tree = make_tree(tmp_path / "jax", layout)
    name = "tensorflow" if layout == "tensorflow_workspace" else "xla"
    lock = make_lock(tmp_path, archive_entry(name, urls=(TF_URL,) if name == "tensorflow" else (XLA_URL,)))
    assert verify_tree(lock, tree)  # before: disagreements
    apply_lock(lock, tree)
    after_first = snapshot(tree)

    again = apply_lock(lock, tree)

    assert again.changed == [] and again.diff == ""
    assert snapshot(tree) == after_first
    assert verify_tree(lock, tree) == []


def test_patches_are_placed_and_listed_then_removed(tmp_path):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    patched = make_lock(tmp_path, archive_entry(patches=[PatchEntry("fix.patch", sha(PATCH))]), patch=PATCH)

    apply_lock(patched, tree)

    label = "//third_party/xla:xlatools-01-fix.patch"
    assert (tree / "third_party/xla/xlatools-01-fix.patch").read_bytes() == PATCH
    module = (tree / "MODULE.bazel").read_text()
    assert f'    patches = ["{label}"],\n    patch_strip = 1,\n)' in module
    assert f'        patch_file = ["{label}"],\n    )' in (tree / "third_party/xla/workspace.bzl").read_text()
    assert verify_tree(patched, tree) == []
    assert apply_lock(patched, tree).changed == []

    apply_lock(make_lock(tmp_path, archive_entry()), tree)  # the same pin without patches

    assert not (tree / "third_party/xla/xlatools-01-fix.patch").exists()
    assert "patch_file" not in (tree / "third_party/xla/workspace.bzl").read_text()
    assert (tree / "third_party/xla/workspace.bzl").read_text() == WORKSPACE_BZL_LOADING


def test_patches_in_the_2022_layout_get_a_build_file(tmp_path):
    tree = make_tree(tmp_path / "jax", "tensorflow_workspace")
    lock = make_lock(
        tmp_path,
        archive_entry("tensorflow", urls=(TF_URL,), patches=[PatchEntry("fix.patch", sha(PATCH))]),
        patch=PATCH,
    )
    apply_lock(lock, tree)
    workspace = (tree / "WORKSPACE").read_text()
    assert 'patches = ["//third_party/xlatools:xlatools-01-fix.patch"],\n    patch_args = ["-p1"],' in workspace
    assert (tree / "third_party/xlatools/BUILD.bazel").exists()
    assert verify_tree(lock, tree) == []


def test_a_changed_patch_is_refused(tmp_path):
    tree = make_tree(tmp_path / "jax", "workspace_bzl")
    lock = make_lock(tmp_path, archive_entry(patches=[PatchEntry("fix.patch", sha(PATCH))]), patch=PATCH)
    (tmp_path / "fix.patch").write_bytes(PATCH + b"+more\n")
    before = snapshot(tree)
    with pytest.raises(PinError, match="changed since the lock was written"):
        apply_lock(lock, tree)
    assert snapshot(tree) == before


def test_cli_dry_run_prints_a_diff_and_changes_nothing(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    make_lock(tmp_path, archive_entry())
    before = snapshot(tree)

    result = pin("apply", "--source", str(tree), "--dry-run")

    assert result.returncode == 0, result.stderr
    assert f'\n-XLA_COMMIT = "{OLD_COMMIT}"\n' in result.stdout and f'\n+XLA_COMMIT = "{COMMIT}"\n' in result.stdout
    assert (
        "--- a/MODULE.bazel" in result.stdout and f'+    integrity = "{hex_to_sri(NEW_SHA)}",  # keep' in result.stdout
    )
    assert snapshot(tree) == before

    applied = pin("apply", "--source", str(tree), "--json")
    assert applied.returncode == 0 and json.loads(applied.stdout)["layout"] == "revision_bzl"
    again = pin("apply", "--source", str(tree))
    assert again.returncode == 0 and "already up to date" in again.stderr


def test_cli_verify_reports_each_disagreement_with_exit_1(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    make_lock(tmp_path, archive_entry())
    assert pin("apply", "--source", str(tree)).returncode == 0
    module = tree / "MODULE.bazel"
    module.write_text(module.read_text().replace(hex_to_sri(NEW_SHA), hex_to_sri("2" * 64)))

    result = pin("verify", "--source", str(tree))

    assert result.returncode == 1
    assert "1 disagreement(s)" in result.stderr
    assert (
        f"MODULE.bazel: archive_override(module_name = \"xla\").integrity is '{hex_to_sri('2' * 64)}'" in result.stderr
    )
    assert pin("apply", "--source", str(tree)).returncode == 0
    assert pin("verify", "--source", str(tree)).returncode == 0


def test_unknown_layout_is_exit_2_naming_files_and_shapes(tmp_path, pin):
    tree = tmp_path / "not-jax"
    tree.mkdir()
    (tree / "WORKSPACE").write_text('workspace(name = "other")\n')
    make_lock(tmp_path, archive_entry())

    result = pin("apply", "--source", str(tree))

    assert result.returncode == 2
    assert "unrecognised JAX tree layout; found WORKSPACE" in result.stderr
    for shape in (
        "third_party/xla/revision.bzl",
        "third_party/xla/workspace.bzl",
        'http_archive(name = "org_tensorflow"',
    ):
        assert shape in result.stderr
    assert "Traceback" not in result.stderr


def test_lock_without_the_dependency_the_tree_pins(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "tensorflow_workspace")
    make_lock(tmp_path, archive_entry())
    result = pin("apply", "--source", str(tree))
    assert result.returncode == 2 and "has no 'tensorflow' entry" in result.stderr


def test_inconsistent_lock_is_refused(tmp_path, pin):
    make_lock(tmp_path, archive_entry())
    data = json.loads((tmp_path / "xlatools.lock").read_text())
    data["dependencies"]["xla"]["integrity"] = hex_to_sri("3" * 64)
    (tmp_path / "xlatools.lock").write_text(json.dumps(data))
    result = pin("verify")
    assert result.returncode == 2 and "does not match sha256" in result.stderr


def test_pin_local_records_head_and_dirty_state(tmp_path, pin, git_repo):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    before = snapshot(tree)

    result = pin("local", "--xla", str(git_repo["path"]), "--json")

    assert result.returncode == 0, result.stderr
    entry = load_lock(tmp_path / "xlatools.lock").xla
    assert (entry.kind, entry.commit, entry.dirty) == ("local", git_repo["head"], False)
    assert entry.local_path == str(git_repo["path"].resolve())
    # What a build takes from the local entry (its --local_xla_path; build.py adds the bazel overrides).
    assert lock_local_xla(load_lock(tmp_path / "xlatools.lock")) == git_repo["path"].resolve()
    applied = pin("apply", "--source", str(tree))
    assert applied.returncode == 0 and f"--local_xla_path={entry.local_path}" in applied.stderr
    assert snapshot(tree) == before
    assert pin("verify", "--source", str(tree)).returncode == 0

    (git_repo["path"] / "README").write_text("edited\n")
    moved = pin("verify", "--source", str(tree))
    assert moved.returncode == 1 and "uncommitted changes the lock did not record" in moved.stderr
    dirty = pin("local", "--xla", str(git_repo["path"]))
    assert dirty.returncode == 0 and "NOT reproducible" in dirty.stderr
    assert load_lock(tmp_path / "xlatools.lock").xla.dirty is True

    git_repo["git"]("commit", "-q", "-am", "three")
    moved = pin("verify", "--source", str(tree))
    assert moved.returncode == 1 and f"the lock says {git_repo['head']}" in moved.stderr

    not_git = pin("local", "--xla", str(tmp_path / "jax"))
    assert not_git.returncode == 2 and "not a git checkout" in not_git.stderr


def test_patches_without_a_place_to_list_them_are_refused(tmp_path):
    tree = make_tree(tmp_path / "jax", "revision_bzl")
    (tree / "MODULE.bazel").unlink()
    (tree / "third_party/xla/workspace.bzl").write_text("# no archive rule here\n")
    lock = make_lock(tmp_path, archive_entry(patches=[PatchEntry("fix.patch", sha(PATCH))]), patch=PATCH)
    before = snapshot(tree)
    with pytest.raises(PinError, match="no place to list patches"):
        apply_lock(lock, tree)
    assert snapshot(tree) == before


def test_verify_checks_a_git_jax_tree_is_at_the_pinned_jax_commit(tmp_path, git_repo):
    tree = make_tree(git_repo["path"], "workspace_bzl")  # the repository plays a JAX checkout here
    git_repo["git"]("add", "-A")
    git_repo["git"]("commit", "-q", "-m", "jax tree")
    head = git_repo["git"]("rev-parse", "HEAD")

    def jax_entry(commit: str) -> LockEntry:
        return LockEntry(**{**archive_entry("jax").__dict__, "commit": commit, "strip_prefix": f"jax-{commit}"})

    lock = make_lock(tmp_path, archive_entry(), jax_entry(head))
    apply_lock(lock, tree)
    assert verify_tree(lock, tree) == []  # the edits apply makes are uncommitted, as expected

    other = make_lock(tmp_path, archive_entry(), jax_entry(git_repo["first"]))
    [finding] = verify_tree(other, tree)
    assert finding.startswith(f"jax: {tree} is at {head}, the lock says {git_repo['first']} ")
    assert "`pin apply` cannot change that" in finding  # the hint points somewhere that can work


def test_a_file_that_does_not_parse_is_a_clear_error(tmp_path, pin):
    tree = make_tree(tmp_path / "jax", "workspace_bzl")
    (tree / "third_party/xla/workspace.bzl").write_text('XLA_COMMIT = "unterminated\n')
    make_lock(tmp_path, archive_entry())
    result = pin("apply", "--source", str(tree))
    assert (
        result.returncode == 2 and "third_party/xla/workspace.bzl: cannot read it (unterminated string" in result.stderr
    )
    assert "Traceback" not in result.stderr
