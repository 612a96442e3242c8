"""Which -g flag XLA sources end up with (the openxla/xla#3381 trap)."""

from __future__ import annotations

import pytest

from xlatools.bazelrc import bazel_options
from xlatools.debuginfo import JAXLIB_SAMPLE, XLA_SAMPLE, check_debug_info, debug_info_for, expand_configs
from xlatools.profiles import load

LLVM_SAMPLE = "external/llvm-project/llvm/lib/IR/Value.cpp"


@pytest.mark.parametrize("name", ["dbg-cpu", "dbg-cuda"])
def test_debug_profiles_give_g_to_xla_and_jaxlib(name):
    options = bazel_options(load(name).profile.bazel)
    for path in (XLA_SAMPLE, JAXLIB_SAMPLE, "external/xla/xla/backends/gpu/runtime/thunk.cc"):
        info = debug_info_for(options, path)
        assert info.flag == "-g", (path, info)
    # ... and keep third-party code light, as XLA's own dbg config does.
    assert debug_info_for(options, LLVM_SAMPLE).flag == "-g0"


def test_relwithdebinfo_gives_symbols_to_xla():
    options = bazel_options(load("relwithdebinfo-cuda").profile.bazel)
    assert debug_info_for(options, XLA_SAMPLE).has_debug_info
    assert debug_info_for(options, "external/xla/xla/pjrt/pjrt_client.cc").has_debug_info


def test_opt_profile_has_no_debug_info_and_no_warning():
    profile = load("opt-cuda").profile
    assert not debug_info_for(bazel_options(profile.bazel), XLA_SAMPLE).has_debug_info
    assert check_debug_info(profile) == []


@pytest.mark.parametrize("name", ["dbg-cpu", "dbg-cuda", "relwithdebinfo-cuda", "asan-cpu"])
def test_shipped_debug_profiles_raise_no_warning(name):
    assert check_debug_info(load(name).profile) == []


def test_trap_copt_g_loses_to_later_per_file_g0():
    # XLA's dbg config strips debug info from everything but XLA with a per-file
    # -g0; a --copt=-g added for, say, LLVM comes earlier and loses.
    options = ["--config=dbg", "--copt=-g"]
    info = debug_info_for(options, LLVM_SAMPLE)
    assert info.flag == "-g0" and info.source.startswith("--per_file_copt=")
    assert debug_info_for(options, XLA_SAMPLE).flag == "-g"


def test_profile_falling_into_the_trap_is_flagged(profile_dir):
    (profile_dir / "trap.yaml").write_text(
        "bazel:\n"
        "  compilation_mode: dbg\n"
        "  copts: [-g]\n"
        "  per_file_copts:\n"
        "    - include: ['.*']\n"
        "      options: [-g0]\n"
    )
    warnings = check_debug_info(load("trap").profile)
    assert len(warnings) == 2 and "XLA sources" in warnings[0] and "openxla/xla#3381" in warnings[0]


def test_expand_configs_reports_unknown():
    expanded, unknown = expand_configs(["--config=debug", "--config=cuda"])
    assert "--compilation_mode=fastbuild" in expanded and "--strip=never" in expanded
    assert unknown == ["cuda"]


def test_escaped_commas_in_per_file_copt():
    options = ["--per_file_copt=a\\,b@-g0", "--compilation_mode=dbg"]
    assert debug_info_for(options, "x/a,b/y.cc").flag == "-g0"
    assert debug_info_for(options, "x/a/y.cc").flag == "-g"
