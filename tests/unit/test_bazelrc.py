"""Rendering profiles to .bazelrc text and keeping the managed block."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xlatools.bazelrc import bazel_options, imports_user_rc, quote, render, update_block
from xlatools.errors import UsageError
from xlatools.profiles import load
from xlatools.profiles.search import SHIPPED_DIR

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "bazelrc"
SHIPPED = sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_profile_matches_golden(name):
    text = render(load(name), version="TEST")
    golden = GOLDEN / f"{name}.bazelrc"
    if os.environ.get("XLATOOLS_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"missing golden file {golden}; run with XLATOOLS_UPDATE_GOLDEN=1"
    assert text == golden.read_text()


def test_every_shipped_profile_has_a_golden_file():
    assert sorted(p.stem for p in GOLDEN.glob("*.bazelrc")) == SHIPPED


def test_dbg_cuda_options():
    options = bazel_options(load("dbg-cuda").profile.bazel)
    assert options == [
        "--compilation_mode=dbg",
        "--strip=never",
        "--copt=-DDEBUG_BUILD",
        "--per_file_copt=.*,-xla/,-jaxlib/@-g0",
        "--per_file_copt=xla/,jaxlib/@-g",
    ]


def test_upstream_configs_come_first():
    options = bazel_options(load("relwithdebinfo-cuda").profile.bazel)
    assert options[0] == "--config=debug_symbols"


def test_custom_config_name_and_invalid_one():
    assert "build:mydbg --compilation_mode=dbg" in render(load("dbg-cpu"), "mydbg")
    with pytest.raises(UsageError):
        render(load("dbg-cpu"), "bad name")


def test_quote():
    assert quote("--copt=-O0") == "--copt=-O0"
    assert quote("--copt=-DX=a b") == "'--copt=-DX=a b'"
    assert quote("--per_file_copt=a\\,b@-g") == "'--per_file_copt=a\\,b@-g'"
    assert quote("it's") == "'it'\"'\"'s'"
    with pytest.raises(UsageError):
        quote("a\nb")


def test_update_block_adds_replaces_and_is_idempotent():
    user = "# my own settings\nbuild --jobs=4\n"
    first = update_block(user, "xlatools", "build:xlatools -c dbg\n")
    assert first.changed and first.action == "added"
    assert first.text.startswith(user)
    again = update_block(first.text, "xlatools", "build:xlatools -c dbg\n")
    assert not again.changed and again.action == "unchanged" and again.text == first.text
    second = update_block(first.text + "build --color=yes\n", "xlatools", "build:xlatools -c opt\n")
    assert second.action == "replaced"
    assert "-c dbg" not in second.text and "build:xlatools -c opt" in second.text
    assert second.text.startswith(user) and second.text.endswith("build --color=yes\n")


def test_update_block_keeps_other_configs_apart():
    text = update_block("", "a", "build:a -c dbg\n").text
    text = update_block(text, "b", "build:b -c opt\n").text
    text = update_block(text, "a", "build:a -c fastbuild\n").text
    assert "build:a -c fastbuild" in text and "build:b -c opt" in text and "-c dbg" not in text


def test_update_block_refuses_broken_markers():
    text = update_block("", "xlatools", "build:xlatools -c dbg\n").text
    broken = "\n".join(line for line in text.splitlines() if not line.startswith("# <<<")) + "\n"
    with pytest.raises(UsageError, match="markers"):
        update_block(broken, "xlatools", "build:xlatools -c dbg\n")


def test_imports_user_rc():
    assert imports_user_rc("build -c opt\ntry-import %workspace%/.bazelrc.user\n")
    assert not imports_user_rc("build -c opt\n# try-import %workspace%/.bazelrc.user\n")
