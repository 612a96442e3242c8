"""Generated configs validated by a real bazel on a tiny genrule workspace.

The workspace's .bazelrc try-imports .bazelrc.user (as JAX's does) and defines
stand-ins for the upstream configs a profile names. The genrule writes
$(COMPILATION_MODE), so the mode the profile asked for is observable.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.bazel

# Stand-ins for configs that JAX's .bazelrc defines (debug_symbols, debug) and XLA's tensorflow.bazelrc (dbg).
WORKSPACE_RC = """\
build --spawn_strategy=local
build:debug_symbols --strip=never
try-import %workspace%/.bazelrc.user
"""
BUILD = 'genrule(name = "stamp", outs = ["stamp.txt"], cmd = "echo $(COMPILATION_MODE) > $@")\n'


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("bazel-ws")
    (root / "WORKSPACE").write_text("")
    (root / "BUILD").write_text(BUILD)
    (root / ".bazelrc").write_text(WORKSPACE_RC)
    yield root
    # One bazel server serves the whole module; stop it so nothing outlives the tests.
    bazel = shutil.which("bazel")
    if bazel:
        subprocess.run(
            [bazel, f"--output_user_root={root.parent / 'bazel-root'}", "shutdown"], cwd=root, capture_output=True
        )


def bazel_build(bazel_bin: str, root: Path, config: str = "xlatools"):
    return subprocess.run(
        [bazel_bin, f"--output_user_root={root.parent / 'bazel-root'}", "build", f"--config={config}", "//:stamp"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "profile, mode",
    [("dbg-cpu", "dbg"), ("dbg-cuda", "dbg"), ("relwithdebinfo-cuda", "opt"), ("opt-cuda", "opt"), ("asan-cpu", "opt")],
)
def test_profile_config_builds_with_its_compilation_mode(bazel_bin, workspace, cli, profile, mode):
    written = cli("bazelrc", "--profile", profile, "--source", str(workspace), cwd=workspace)
    assert written.returncode == 0, written.stderr
    result = bazel_build(bazel_bin, workspace)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (workspace / "bazel-bin" / "stamp.txt").read_text().strip() == mode


def test_custom_config_name(bazel_bin, workspace, cli):
    written = cli("bazelrc", "--profile", "dbg-cpu", "--config-name", "mine", "--source", str(workspace), cwd=workspace)
    assert written.returncode == 0
    result = bazel_build(bazel_bin, workspace, "mine")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (workspace / "bazel-bin" / "stamp.txt").read_text().strip() == "dbg"


def test_invalid_bazel_flag_makes_bazel_fail(bazel_bin, workspace, cli, tmp_path):
    # Proof that the test above can fail: bazel really parses what we generate.
    bad = tmp_path / "bogus.yaml"
    bad.write_text("extends: dbg-cpu\nbazel:\n  extra_options: [--bogus_flag]\n")
    written = cli("bazelrc", "--profile", str(bad), "--source", str(workspace), cwd=workspace)
    assert written.returncode == 0
    result = bazel_build(bazel_bin, workspace)
    assert result.returncode != 0
    assert "Unrecognized option: --bogus_flag" in result.stderr


def test_unknown_upstream_config_makes_bazel_fail(bazel_bin, workspace, cli, tmp_path):
    bad = tmp_path / "noconfig.yaml"
    bad.write_text("bazel:\n  configs: [no_such_upstream_config]\n")
    assert cli("bazelrc", "--profile", str(bad), "--source", str(workspace), cwd=workspace).returncode == 0
    result = bazel_build(bazel_bin, workspace)
    assert result.returncode != 0 and "no_such_upstream_config" in result.stderr


def test_quoted_options_survive_bazelrc_parsing(bazel_bin, workspace, cli, tmp_path):
    odd = tmp_path / "odd.yaml"
    odd.write_text(
        "bazel:\n"
        "  compilation_mode: fastbuild\n"
        "  copts: ['-DGREETING=hello world']\n"
        "  per_file_copts:\n"
        "    - include: ['a,b']\n"
        "      options: ['-DX=1,2']\n"
    )
    assert cli("bazelrc", "--profile", str(odd), "--source", str(workspace), cwd=workspace).returncode == 0
    result = bazel_build(bazel_bin, workspace)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (workspace / "bazel-bin" / "stamp.txt").read_text().strip() == "fastbuild"
