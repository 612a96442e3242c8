"""Preset catalog: shipped data, user presets, errors (pure, no jax)."""

import pytest

from xlatools.errors import ProfileError, UsageError
from xlatools.run.presets.catalog import KINDS, Catalog

REQUIRED = {
    "dump": ["hlo", "passes", "html", "proto", "snapshots", "fusion", "llvm", "full"],
    "log": ["info", "vlog1", "vlog2", "passes", "compiles"],
    "jax": ["ir", "no-opt", "tracebacks"],
    "frontend": ["tf-clustering", "torch-xla"],
}


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("XLATOOLS_PRESET_PATH", raising=False)


def test_shipped_presets_exist():
    catalog = Catalog.load()
    for kind, names in REQUIRED.items():
        for name in names:
            assert catalog.get(f"{kind}:{name}").kind == kind


def test_full_is_the_classic_recipe():
    full = Catalog.load().get("full")
    assert set(full.xla_flags) == {
        "--xla_dump_hlo_pass_re=.*",
        "--xla_dump_hlo_as_text",
        "--xla_dump_hlo_as_html",
        "--xla_dump_hlo_snapshots",
        "--xla_dump_hlo_as_proto",
    }


def test_llvm_is_newer_only():
    assert Catalog.load().get("llvm").jaxlib_range() == ("0.10.2", None)
    assert Catalog.load().get("hlo").jaxlib_range() == (None, None)


def test_log_presets_unhide_info():
    catalog = Catalog.load()
    for name in ("info", "vlog1", "vlog2", "passes"):
        assert catalog.get(f"log:{name}").env["TF_CPP_MIN_LOG_LEVEL"] == "0"


def test_ambiguous_and_unknown():
    catalog = Catalog.load()
    with pytest.raises(UsageError, match="ambiguous.*dump:passes.*log:passes"):
        catalog.get("passes")
    with pytest.raises(UsageError, match="unknown preset 'hlx'") as info:
        catalog.get("hlx")
    assert "did you mean 'hlo'" in info.value.hint
    assert catalog.get("passes", kind="dump").kind == "dump"


def test_user_and_profile_presets(tmp_path, monkeypatch):
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "mine.yaml").write_text(
        "mydump:\n  kind: dump\n  description: mine\n  xla_flags: [--xla_dump_hlo_as_proto]\n"
    )
    monkeypatch.setenv("XLATOOLS_PRESET_PATH", str(extra))
    catalog = Catalog.load({"team": {"kind": "jax", "env": {"JAX_TRACEBACK_FILTERING": "off"}}})
    assert catalog.get("mydump").xla_flags == ("--xla_dump_hlo_as_proto",)
    assert catalog.get("team").source == "profile run.define_presets"


def test_bad_definitions_are_reported_together(tmp_path, monkeypatch):
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "bad.yaml").write_text(
        "hlo:\n  kind: dump\n  xla_flags: [--xla_dump_hlo_as_text]\n"  # duplicate of a shipped one
        "x:\n  kind: dumps\n  flags: []\n"  # bad kind, unknown key
        "y:\n  kind: log\n  env: {A: true}\n"
    )
    monkeypatch.setenv("XLATOOLS_PRESET_PATH", str(extra))
    with pytest.raises(ProfileError) as info:
        Catalog.load()
    rendered = "\n".join(p.render() for p in info.value.problems)
    assert "already defined" in rendered
    assert "kind must be one of" in rendered
    assert "unknown key 'flags'" in rendered and "did you mean 'xla_flags'" in rendered
    assert "env must map names to strings" in rendered


def test_a_preset_of_another_kind_is_refused_where_one_kind_is_expected():
    catalog = Catalog.load()
    with pytest.raises(UsageError, match="'gpu:f32' is a gpu preset; a dump preset is expected"):
        catalog.get("gpu:f32", kind="dump")
    assert catalog.get("dump:hlo", kind="dump").name == "hlo"


def test_presets_a_profile_names_are_checked_with_file_line_and_key():
    catalog = Catalog.load()
    where = {"run.presets[1]": "./p.yaml:4", "run.dump_preset": "./p.yaml:6"}
    with pytest.raises(ProfileError) as refused:
        catalog.check_profile(["dump:hlo", "gpu:nosuch"], None, where)
    (problem,) = refused.value.problems
    assert (problem.file, problem.line, problem.key) == ("./p.yaml", 4, "run.presets[1]")
    assert "unknown gpu preset 'nosuch'" in problem.message
    with pytest.raises(ProfileError) as refused:
        catalog.check_profile([], "gpu:f32", where)
    assert refused.value.problems[0].render().startswith("./p.yaml:6 [run.dump_preset]: 'gpu:f32' is a gpu preset")
    catalog.check_profile(["dump:hlo"], "passes", where)


def test_kinds_order():
    kinds = [p.kind for p in Catalog.load().by_kind()]
    assert kinds == sorted(kinds, key=KINDS.index)


def test_suggestions_qualify_shared_names_and_swapped_refs():
    catalog = Catalog.load()
    with pytest.raises(UsageError) as info:
        catalog.get("passes:dump")
    assert "did you mean 'dump:passes'" in info.value.hint
    with pytest.raises(UsageError) as info:
        catalog.get("pases")
    assert "'dump:passes' or 'log:passes'" in info.value.hint


def test_shipped_json_is_the_shipped_yaml():
    """Runs read shipped.json (no YAML parser on the hot path); it must say what the YAML says."""
    import json

    from xlatools.run.presets.catalog import SHIPPED_JSON, shipped_definitions

    expected = {path.name: content for path, content in shipped_definitions()}
    assert json.loads(SHIPPED_JSON.read_text()) == expected, "regenerate it: python -m xlatools.run.presets.catalog"
