"""Loader, merging, provenance and error reporting, in process."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from xlatools.errors import ProfileError, UsageError
from xlatools.profiles import load


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def problems_of(ref: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        load(ref)
    return [p.render() for p in info.value.problems]


def test_shipped_profiles_load():
    for name in ("base", "dbg-cpu", "dbg-cuda", "relwithdebinfo-cuda", "opt-cuda", "asan-cpu"):
        assert load(name).profile.name == name


def test_dbg_cuda_inherits_dbg_cpu_and_appends_wheels():
    resolved = load("dbg-cuda")
    profile = resolved.profile
    assert resolved.chain == ("base", "dbg-cpu", "dbg-cuda")
    assert profile.bazel.compilation_mode == "dbg"
    assert profile.bazel.strip == "never"
    assert profile.target.backend == "cuda"
    assert profile.target.compute_capabilities == ["sm_90"]
    assert profile.build.wheels == ["jaxlib", "jax-cuda-plugin", "jax-cuda-pjrt"]


def test_merge_rules_and_provenance(profile_dir):
    write(
        profile_dir,
        "parent",
        """
        description: parent
        bazel:
          compilation_mode: opt
          copts: [-O2, -Wall]
          repo_env: {A: "1", B: "2"}
        run:
          env: {KEEP: yes-please}
    """,
    )
    write(
        profile_dir,
        "child",
        """
        extends: parent
        bazel:
          compilation_mode: dbg
          copts: [-Wall, -O0]
          repo_env: {B: "3"}
    """,
    )
    resolved = load("child")
    bazel = resolved.profile.bazel
    assert bazel.compilation_mode == "dbg"  # scalar replaced
    assert bazel.copts == ["-O2", "-Wall", "-O0"]  # list appended, duplicate skipped
    assert bazel.repo_env == {"A": "1", "B": "3"}  # mapping merged key by key
    assert resolved.profile.description == ""  # descriptions are not inherited
    assert resolved.profile.run.env == {"KEEP": "yes-please"}
    origin = resolved.origins[("bazel", "compilation_mode")]
    assert Path(origin.file).name == "child.yaml" and origin.line == 3
    assert Path(resolved.origins[("bazel", "copts", 0)].file).name == "parent.yaml"
    assert Path(resolved.origins[("bazel", "copts", 2)].file).name == "child.yaml"
    assert Path(resolved.origins[("bazel", "repo_env", "A")].file).name == "parent.yaml"


def test_replace_tag_resets_a_list(profile_dir):
    write(profile_dir, "parent", "bazel:\n  copts: [-O2, -Wall]\n")
    write(profile_dir, "child", "extends: parent\nbazel:\n  copts: !replace [-O0]\n")
    assert load("child").profile.bazel.copts == ["-O0"]


def test_multiple_parents_merge_in_order(profile_dir):
    write(profile_dir, "a", "bazel:\n  compilation_mode: opt\n  copts: [-DA]\n")
    write(profile_dir, "b", "bazel:\n  compilation_mode: dbg\n  copts: [-DB]\n")
    write(profile_dir, "c", "extends: [a, b]\n")
    resolved = load("c")
    assert resolved.chain == ("a", "b", "c")
    assert resolved.profile.bazel.compilation_mode == "dbg"
    assert resolved.profile.bazel.copts == ["-DA", "-DB"]


def test_profile_by_path_and_sibling_parent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    write(other, "sib", "bazel:\n  jobs: 3\n")
    path = write(other, "mine", "extends: sib\n")
    assert load(str(path)).profile.bazel.jobs == 3


def test_all_problems_reported_at_once_with_lines(profile_dir):
    write(
        profile_dir,
        "bad",
        """
        description: several mistakes
        extends: [dbg-cpu, nothere]
        target:
          backend: cudaa
          cuda: 12.8
        bazel:
          compilation_mod: dbg
    """,
    )
    problems = problems_of("bad")
    text = "\n".join(problems)
    assert len(problems) == 4, text
    assert "bad.yaml:2 [extends]" in text and "no profile named 'nothere'" in text
    assert "bad.yaml:4 [target.backend]: expected 'cpu', 'cuda' or 'rocm'; got 'cudaa'" in text
    assert "bad.yaml:5 [target.cuda]" in text and 'quote it in YAML: "12.8"' in text
    assert (
        "bad.yaml:7 [bazel.compilation_mod]: unknown key 'compilation_mod' (did you mean 'compilation_mode'?)" in text
    )


def test_unknown_key_in_list_item_suggests(profile_dir):
    write(
        profile_dir,
        "p",
        """
        bazel:
          per_file_copts:
            - include: [xla/]
              optons: [-g]
    """,
    )
    text = "\n".join(problems_of("p"))
    assert "p.yaml:4 [bazel.per_file_copts[0].optons]: unknown key 'optons' (did you mean 'options'?)" in text
    assert "[bazel.per_file_copts[0].options]: field required" in text


def test_unknown_top_level_key_lists_nothing_close(profile_dir):
    write(profile_dir, "p", "zzzzz: 1\n")
    assert "allowed here:" in problems_of("p")[0]


def test_malformed_yaml(profile_dir):
    (profile_dir / "m.yaml").write_text("a: [1,\n b: 2\n")
    (problem,) = problems_of("m")
    assert "m.yaml:3" in problem and "malformed YAML" in problem


def test_empty_file(profile_dir):
    (profile_dir / "e.yaml").write_text("# only a comment\n")
    assert "empty profile" in problems_of("e")[0]


def test_not_a_mapping(profile_dir):
    (profile_dir / "l.yaml").write_text("- a\n- b\n")
    assert "must be a mapping" in problems_of("l")[0]


def test_duplicate_key(profile_dir):
    (profile_dir / "d.yaml").write_text("description: a\ndescription: b\n")
    assert "d.yaml:2: duplicate key 'description' (first at line 1)" in problems_of("d")[0]


def test_extends_cycle(profile_dir):
    write(profile_dir, "x", "extends: y\n")
    write(profile_dir, "y", "extends: x\n")
    (problem,) = problems_of("x")
    assert "extends cycle" in problem and "x.yaml -> " in problem


def test_self_extension_is_a_cycle(profile_dir):
    write(profile_dir, "selfish", "extends: selfish\n")
    assert "extends cycle" in problems_of("selfish")[0]


def test_missing_parent_suggests(profile_dir):
    write(profile_dir, "p", "extends: dbg-cpuu\n")
    (problem,) = problems_of("p")
    assert "no profile named 'dbg-cpuu'" in problem and "did you mean 'dbg-cpu'" in problem


def test_duplicate_names_on_search_path(profile_dir, tmp_path, monkeypatch):
    second = tmp_path / "more"
    second.mkdir()
    write(profile_dir, "twin", "description: one\n")
    write(second, "twin", "description: two\n")
    monkeypatch.setenv("XLATOOLS_PROFILE_PATH", f"{profile_dir}:{second}")
    with pytest.raises(ProfileError) as info:
        load("twin")
    assert "defined more than once" in info.value.problems[0].render()


def test_name_must_match_file(profile_dir):
    write(profile_dir, "real", "name: other\n")
    assert "does not match the file name" in problems_of("real")[0]


def test_unknown_profile_name(profile_dir):
    with pytest.raises(UsageError) as info:
        load("dbg-cudda")
    assert "did you mean 'dbg-cuda'" in info.value.hint


def test_env_values_accept_integers_but_not_floats(profile_dir):
    write(profile_dir, "p", "run:\n  env: {TF_CPP_MIN_LOG_LEVEL: 0}\n")
    assert load("p").profile.run.env == {"TF_CPP_MIN_LOG_LEVEL": "0"}
    write(profile_dir, "q", "run:\n  env: {X: 1.10}\n")
    assert "quote it in YAML" in problems_of("q")[0]


def test_nccl_false_and_bad_wheel(profile_dir):
    write(profile_dir, "p", "target:\n  nccl: false\n")
    assert load("p").profile.target.nccl is False
    write(profile_dir, "w", "build:\n  wheels: [jax-cuda-plugn]\n")
    assert "did you mean 'jax-cuda-plugin'" in problems_of("w")[0]
