"""Crash regressions, the pure parts: the crash oracle, triage's crash finding and pass test, why a snapshot holds
no result, a child's death in a run's log, and ISSUE.md of a crash."""

from __future__ import annotations

from pathlib import Path

from xlatools.bisect.checks import TestOptions
from xlatools.bisect.rule import Rule
from xlatools.records.reduce import CrashSignature, OracleSpec
from xlatools.records.replay import ModuleRecord, RunRecord
from xlatools.records.triage import CrashFound, DiffFound, DumpsFound, SideRun, TriageSpec, TriageState
from xlatools.records.bisect import ProgramTestSpec
from xlatools.reduce.oracle import judge_crash, same_frames
from xlatools.replay.outcome import no_result_note, table
from xlatools.run.child_crash import find_child_crash
from xlatools.triage.crash import crash_of, crash_test, diff_finding
from xlatools.vocab import Interest, OracleKind, ReplayOutcome

SEGV = CrashSignature(
    signal="SIGSEGV", phase="run", frames=["#8 slinky::internal::can_fuse<x>(long) () from libjax_common.so"]
)


def _run(label="test", failure=None, phase="compare", signal=None, message=None, log_tail=()):
    return RunRecord(
        label=label,
        python="py",
        failure=failure,
        phase=phase,
        signal=signal,
        message=message,
        log_tail=list(log_tail),
    )


def test_the_crash_oracle_keeps_only_the_same_death():
    spec = OracleSpec(kind=OracleKind.CRASH, crash=SEGV)
    same = judge_crash(spec, _run(failure=ReplayOutcome.CRASH, phase="run", signal="SIGSEGV"))
    assert same.interest == Interest.INTERESTING and "as the original" in same.reason
    for other in (
        _run(),  # it ran
        _run(failure=ReplayOutcome.CRASH, phase="run", signal="SIGABRT"),  # another signal
        _run(failure=ReplayOutcome.CRASH, phase="compile", signal="SIGSEGV"),  # in the compiler, not at run time
        _run(failure=ReplayOutcome.COMPILE_ERROR, phase="compile", message="INVALID_ARGUMENT: bad"),
        _run(failure=ReplayOutcome.CRASH, phase="load", signal="SIGSEGV"),  # the text did not load
    ):
        assert judge_crash(spec, other).interest == Interest.NOT_INTERESTING, other
    check = CrashSignature(failure=ReplayOutcome.COMPILE_ERROR, phase="compile", message="Check failed: x != y")
    spec = OracleSpec(kind=OracleKind.CRASH, crash=check)
    said = _run(
        failure=ReplayOutcome.COMPILE_ERROR, phase="compile", message="INTERNAL", log_tail=["Check failed: x != y"]
    )
    assert judge_crash(spec, said).interest == Interest.INTERESTING
    other = _run(failure=ReplayOutcome.COMPILE_ERROR, phase="compile", message="INTERNAL: something else")
    assert judge_crash(spec, other).interest == Interest.NOT_INTERESTING
    assert (
        spec.describe()
        == "the test dies by compile-error (Check failed: x != y) while compiling (as the original module does)"
    )


def test_top_frames_are_compared_by_function_name():
    reduced = [
        "#7 bool slinky::internal::can_fuse<slinky::buffer<void const, 8ul> >(long, long) () from libjax_common.so"
    ]
    assert same_frames(SEGV.frames, reduced) is True
    assert same_frames(SEGV.frames, ["#3 xla::cpu::Other::Run() () from libjax_common.so"]) is False
    assert same_frames(SEGV.frames, []) is None


def _module(test: RunRecord, *references: RunRecord, outcome=ReplayOutcome.CRASH) -> ModuleRecord:
    return ModuleRecord(name="jit__lambda", id=6, outcome=outcome, runs=[test, *references])


def test_a_module_that_crashes_on_first_bad_and_runs_on_last_good_is_the_finding(tmp_path):
    backtrace = tmp_path / "native-backtrace.txt"
    backtrace.write_text(
        "Thread 2 (LWP 7):\n#0  sleep () from libc.so.6\n#1  <signal handler called>\n"
        "#2  0x00007f in slinky::internal::can_fuse<x>(long) () from /v/jaxlib/libjax_common.so\n"
    )
    crashed = _run(failure=ReplayOutcome.CRASH, phase="run", signal="SIGSEGV", message="the target died (SIGSEGV)")
    crashed.native_backtrace = str(backtrace)
    refused = _module(
        _run(failure=ReplayOutcome.CRASH, phase="run", signal="SIGSEGV"), _run("ref", ReplayOutcome.CRASH)
    )
    assert crash_of([refused]) is None  # the last good release crashes too: no regression
    module, found = crash_of([_module(_run()), _module(crashed, _run("reference-python-1"))])
    assert (module.id, found.signal, found.phase, found.what()) == (6, "SIGSEGV", "run", "SIGSEGV while running")
    assert found.frames == ["#2 slinky::internal::can_fuse<x>(long) () from libjax_common.so"]
    diff = DiffFound(json="d.json", report="r.html", modules_differ=True)
    said = diff_finding(diff, [_module(crashed, _run("reference-python-1"))], "1 of 2 differ", "0.10.1", "0.10.2")
    assert "module 0006 jit__lambda crashes on jax 0.10.2 (SIGSEGV while running) and runs on jax 0.10.1" in said
    assert diff.module == "6" and diff.crash is not None and diff.mismatch == "crashes: SIGSEGV while running"


def test_the_pass_bisection_of_a_crash_asks_for_the_same_death():
    crash = CrashFound(failure="crash", phase="run", signal="SIGSEGV")
    test = crash_test(TestOptions(program="check.py"), crash, 139)
    assert (test.rule.match, test.rule.bad_exit) == (r"Fatal\ Python\ error:\ Segmentation\ fault", (139,))
    own = TestOptions(program="check.py", rule=Rule(match="boom"))
    assert crash_test(own, crash, 139) is own  # the user's own test is kept
    compiler = CrashFound(failure="compile-error", phase="compile", message="INTERNAL: Check failed: a == b")
    assert crash_test(TestOptions(program="c.py"), compiler, 1).rule.match == r"INTERNAL:\ Check\ failed:\ a\ ==\ b"


def test_why_a_snapshot_holds_no_result_comes_from_what_the_bundle_shows():
    died = no_result_note(False, "died by SIGSEGV", references=True)
    assert "the run died by SIGSEGV" in died and "donated" not in died and "--reference" not in died
    assert "alias donated inputs" in no_result_note(True, None, references=False)
    assert "donates nothing" in no_result_note(False, None, references=False)
    assert no_result_note(None, None, references=False).endswith("--reference-python or --reference cpu")
    module = _module(_run(failure=ReplayOutcome.CRASH, phase="run", signal="SIGSEGV"), _run("reference-python-1"))
    module.notes.append(died)
    row = table([module]).splitlines()[1]
    assert (
        "crash SIGSEGV" in row and "reference-python-1: ok" in row and "snapshot: no result (the run died first)" in row
    )


def test_a_child_processs_death_is_found_in_the_log(tmp_path):
    (tmp_path / "stderr.log").write_text(
        "some output\nFatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n"
        '  File "<string>", line 1 in <module>\n\nExtension modules: numpy\nchild ended -11\n'
    )
    crash = find_child_crash(tmp_path, "stderr.log")
    assert crash is not None and (crash.signal, crash.log) == ("SIGSEGV", "stderr.log")
    assert crash.traceback[0] == "Fatal Python error: Segmentation fault" and crash.traceback[-1].endswith("<module>")
    (tmp_path / "clean.log").write_text("Traceback (most recent call last):\nValueError: no\n")
    assert find_child_crash(tmp_path, "clean.log") is None


def test_issue_md_of_a_crash_is_titled_as_one_and_shows_the_frames(tmp_path):
    from xlatools.triage.report import render

    spec = TriageSpec(
        good="0.10.1", bad="0.10.2", python_version="3.11", platform="cpu", test=ProgramTestSpec(program="check.py"),
        atol=1e-3, rtol=1e-3,
    )  # fmt: skip
    state = TriageState(spec=spec, folder=Path(tmp_path))
    side = SideRun(version="0.10.2", python="bad/python", bundle=str(tmp_path / "runs/bad"), exit_code=139)
    state.dumps = DumpsFound(
        last_good=SideRun(version="0.10.1", python="good/python", bundle=str(tmp_path)), first_bad=side
    )
    state.diff = DiffFound(json="d.json", report="r.html", modules_differ=True, module="6", module_name="jit__lambda")
    state.diff.crash = CrashFound(
        failure="crash", phase="run", signal="SIGSEGV", frames=["#8 slinky::can_fuse () from libjax_common.so"]
    )
    text = render(state, "check.py", ["triage", "--good", "0.10.1", "--bad", "0.10.2", "--", "check.py"], None)
    assert text.startswith(
        "# jaxlib 0.10.2 (CPU): a crash (SIGSEGV while running) in `check.py` (jaxlib 0.10.1 runs it)"
    )
    assert "module `jit__lambda` dies by SIGSEGV while running" in text and "#8 slinky::can_fuse" in text
