"""Pure parts of native debugging: name() decoding, breakpoint planning, the hook's environment,
launch.json merging with comments, setup's source maps."""

from __future__ import annotations

import pytest

from xlatools.debug.breaks import PassCatalog, dump_pass_regex, plan_breakpoints
from xlatools.debug.crash import hook_env, with_crash_capture
from xlatools.debug.jsonc import loads, merge_configurations
from xlatools.debug.passmap import PassClass, PassMap, decode_name_x86_64
from xlatools.errors import UsageError
from xlatools.records.debug import Breakpoint

# jaxlib 0.10.2's xla::AlgebraicSimplifier::name() at 0x688aae0: push, mov, lea rip+disp, mov $7, pop, ret.
ALGSIMP_NAME = bytes.fromhex("554889e5488d15151fa2fab8070000005dc3")


def test_name_literal_is_decoded_from_the_code_of_name():
    assert decode_name_x86_64(ALGSIMP_NAME, 0x688AAE0) == (0x688AAE4 + 7 - 0x55DE0EB, 7)
    assert decode_name_x86_64(bytes.fromhex("554889e5488b4708488b07c3"), 0) is None  # returns a member: not constant


def _catalog() -> PassCatalog:
    run_impl = "_ZN3xla14OpExpanderPass7RunImplE"
    classes = [
        PassClass(
            "xla::AlgebraicSimplifier",
            "algsimp",
            "xla::AlgebraicSimplifier",
            "_ZalgsimpRun",
            "xla::AlgebraicSimplifier::RunImpl",
            "xla::AlgebraicSimplifier",
        ),
        PassClass(
            "xla::RngExpander",
            "rng-expander",
            "xla::RngExpander",
            run_impl,
            "xla::OpExpanderPass::RunImpl",
            "xla::OpExpanderPass",
        ),
        PassClass(
            "xla::QrExpander",
            "qr_expander",
            "xla::QrExpander",
            run_impl,
            "xla::OpExpanderPass::RunImpl",
            "xla::OpExpanderPass",
        ),
    ]
    return PassCatalog([PassMap("/lib.so", "EM_X86_64", True, classes)])


def test_breakpoints_check_the_class_only_where_passes_share_an_entry():
    plan = plan_breakpoints(_catalog(), ["algsimp", "rng-expander"], ["abort"])
    assert plan == [
        Breakpoint(label="pass algsimp", location="_ZalgsimpRun", pass_="algsimp", library="/lib.so"),
        Breakpoint(
            label="pass rng-expander",
            location="_ZN3xla14OpExpanderPass7RunImplE",
            pass_="rng-expander",
            classes=("xla::RngExpander",),
            library="/lib.so",
        ),
        Breakpoint(label="symbol abort", location="abort"),
    ]
    with pytest.raises(UsageError, match="did you mean algsimp"):
        plan_breakpoints(_catalog(), ["algsim"], [])
    assert dump_pass_regex(["algsimp", "rng-expander", "algsimp"]) == r"^(algsimp|rng\-expander)$"


def test_hook_environment_keeps_the_users_pythonpath_for_the_program():
    env = hook_env({"PYTHONPATH": "/mine"}, {"XLATOOLS_CRASH_TRACE": "/b/native-backtrace.txt"})
    assert env["PYTHONPATH"].endswith(":/mine") and env["XLATOOLS_HOOK_PYTHONPATH"] == "/mine"
    assert with_crash_capture({"XLATOOLS_NATIVE_BACKTRACE": "0"}, "/b") == {"XLATOOLS_NATIVE_BACKTRACE": "0"}


VSCODE = """{
    // Use IntelliSense to learn about possible attributes.
    "version": "0.2.0",
    "configurations": [
        {"name": "Mine", "request": "launch",}, // mine
        /* an old one of ours */
        {"name": "xlatools: A", "x": 1},
    ]
}
"""


def test_launch_json_merge_replaces_ours_keeps_comments_and_theirs():
    ours = [{"name": "xlatools: A", "x": 2}, {"name": "xlatools: B", "y": [1, 2]}]
    merged = merge_configurations(VSCODE, ours, "launch.json")
    assert "// mine" in merged and "/* an old one of ours */" in merged and "// Use IntelliSense" in merged
    assert loads(merged, "l")["configurations"] == [{"name": "Mine", "request": "launch"}, *ours]
    assert merge_configurations(merged, ours, "launch.json") == merged
    assert loads(merge_configurations(None, ours, "l"), "l") == {"version": "0.2.0", "configurations": ours}
    assert loads(merge_configurations('{"version": "0.2.0"}', ours, "l"), "l")["configurations"] == ours
    with pytest.raises(UsageError, match="not valid JSON with comments"):
        merge_configurations('{"configurations": [', ours, "launch.json")
    with pytest.raises(UsageError, match="never closed"):
        merge_configurations('{/* "configurations": []}', ours, "launch.json")


def test_launch_json_with_one_of_our_names_twice_keeps_one_in_its_first_place():
    ours = [{"name": "xlatools: A", "x": 2}, {"name": "xlatools: B", "y": 3}]
    twice = """{
    "configurations": [
        {"name": "xlatools: A", "x": 0},  // ours, first
        {"name": "Mine"},
        {"name": "xlatools: A", "x": 1}, /* ours, again */
        {"name": "xlatools: B", "y": 0},
        {"name": "xlatools: B", "y": 1}
    ]
}
"""
    merged = merge_configurations(twice, ours, "launch.json")
    assert loads(merged, "l")["configurations"] == [ours[0], {"name": "Mine"}, ours[1]]
    assert "// ours, first" in merged and merge_configurations(merged, ours, "launch.json") == merged


def test_setup_maps_bzlmod_external_xla_before_the_tree(tmp_path, monkeypatch):
    from xlatools.debug.setup import SetupRequest, default_output_base, plan_setup

    (tmp_path / "ob" / "external" / "xla+").mkdir(parents=True)
    (tmp_path / "tree").mkdir()
    request = SetupRequest(
        tmp_path / "tree", "dbg-cpu", tmp_path / "tree", "/py", None, tmp_path / "ob", "/usr/bin/gdb"
    )
    plan = plan_setup(request, {})
    assert plan.substitutions == [
        ("/proc/self/cwd/external/xla+", str(tmp_path / "ob/external/xla+")),
        ("external/xla+", str(tmp_path / "ob/external/xla+")),
        ("/proc/self/cwd", str(tmp_path / "tree")),
    ]
    assert plan.warnings == []
    assert str(default_output_base(tmp_path, {"USER": "u", "HOME": "/h"}).parent) == "/h/.cache/bazel/_bazel_u"


def test_doctors_gdb_and_ptrace_verdicts_from_the_facts():
    from xlatools.doctor.checks_debug import check_gdb, check_ptrace
    from xlatools.vocab import CheckStatus

    assert check_gdb(None, None).status == CheckStatus.WARN and "apt-get install gdb" in check_gdb(None, None).fix
    assert (
        check_gdb("/usr/bin/gdb", "GNU gdb 13.1", "gdb on PATH").evidence
        == "debugger /usr/bin/gdb (gdb on PATH): GNU gdb 13.1"
    )
    assert check_ptrace("1", None).status == CheckStatus.OK
    assert check_ptrace(None, None).status == CheckStatus.OK
    assert (check_ptrace("2", None).status, check_ptrace("3", None).status) == (CheckStatus.WARN, CheckStatus.FAIL)
    denied = check_ptrace("0", "Operation not permitted")
    assert denied.status == CheckStatus.FAIL and "--cap-add=SYS_PTRACE" in denied.fix


# Lines of a real native-backtrace.txt (a reduce of a module that jaxlib 0.10.2 aborts on), paths shortened.
_CRASH = """== native frames (gdb) ==
Thread 16 (Thread 0x7fde3b1f86c0 (LWP 6107) "python3"):
#0  syscall () at ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38
#5  0x00007fde566deb35 in xla::SlowOperationAlarm::AlarmLoop() () from /v/jaxlib/libjax_common.so

Thread 8 (Thread 0x7fe5cb7fe6c0 (LWP 2604) "python3"):
#2  0x00007fe5f2097d8a in __sleep (seconds=0) at ../sysdeps/posix/sleep.c:55
#3  <signal handler called>
#4  __pthread_kill_implementation (threadid=<optimized out>, signo=signo@entry=6, no_tid=no_tid@entry=0) at ./nptl/pthread_kill.c:44
#7  <signal handler called>
#10 0x00007fe5f1ffffb2 in __GI_raise (sig=sig@entry=6) at ../sysdeps/posix/raise.c:26
#11 0x00007fe5f1fea472 in __GI_abort () at ./stdlib/abort.c:79
#12 0x00007fe5f0a9d919 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6
#16 0x00007fe5f0aa01e9 in std::__throw_length_error(char const*) () from /lib/x86_64-linux-gnu/libstdc++.so.6
#18 0x00007fe5ea0e4a59 in xla::cpu::ExecutionEngine::AllocateDylibs(unsigned long) () from /v/jaxlib/libjax_common.so

== Python traceback (faulthandler) ==
Thread 0x00007fe5cb7fe6c0 (most recent call first):
"""


def test_crashing_frames_are_the_crashed_threads_below_its_signal_handler():
    from xlatools.debug.crash import crashing_frames

    assert crashing_frames(_CRASH) == [
        "#16 std::__throw_length_error(char const*) () from libstdc++.so.6",
        "#18 xla::cpu::ExecutionEngine::AllocateDylibs(unsigned long) () from libjax_common.so",
    ]
    assert crashing_frames(_CRASH, count=1) == ["#16 std::__throw_length_error(char const*) () from libstdc++.so.6"]
    assert crashing_frames("gdb was not found when the program started: no native frames") == []
