"""`xlatools presets` and `xlatools inspect` through the real CLI (no jax needed)."""

import json


def test_presets_list_and_show(cli, tmp_path):
    result = cli("presets", "list", "--json", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    names = {(p["kind"], p["name"]) for p in json.loads(result.stdout)["presets"]}
    assert ("dump", "full") in names and ("log", "passes") in names and ("frontend", "torch-xla") in names
    shown = cli("presets", "show", "llvm", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert shown.returncode == 0 and ">= 0.10.2" in shown.stdout and "--xla_dump_emitter_re=.*" in shown.stdout
    bad = cli("presets", "show", "hlx", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert bad.returncode == 2 and "did you mean 'hlo'" in bad.stderr and "Traceback" not in bad.stderr


def test_user_preset_dir_and_broken_file(cli, tmp_path):
    presets = tmp_path / "xlatools" / "presets"
    presets.mkdir(parents=True)
    (presets / "team.yaml").write_text("team-dump:\n  kind: dump\n  xla_flags: [--xla_dump_hlo_as_proto]\n")
    result = cli("presets", "show", "team-dump", "--json", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["source"].endswith("team.yaml")
    (presets / "broken.yaml").write_text("x: [unclosed\n")
    result = cli("presets", "list", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert (
        result.returncode == 2 and "broken.yaml:" in result.stderr and "malformed YAML" in result.stderr
    )  # one YAML reader, one wording


def test_inspect_errors(cli, tmp_path):
    result = cli("inspect", str(tmp_path / "nope"))
    assert result.returncode == 2 and "no such file or directory" in result.stderr
    (tmp_path / "module_0000.jit_f.before_optimizations.txt").write_text("HloModule jit_f\n")
    result = cli("inspect", str(tmp_path), "--module", "jit_g")
    assert result.returncode == 2 and "no module 'jit_g'" in result.stderr and "did you mean 'jit_f'" in result.stderr
    result = cli("inspect", str(tmp_path), "--json")
    assert json.loads(result.stdout)["modules"][0]["name"] == "jit_f"
