"""Source lines of HLO modules from real before_optimizations.txt dumps (tests/fixtures/hlo)."""

from __future__ import annotations

from pathlib import Path

from xlatools.run.dump_source import SourceLine, _stack, scan_before

HLO = Path(__file__).resolve().parent.parent / "fixtures" / "hlo"


def test_call_site_of_the_jitted_function_on_new_jaxlib():
    # deep.py: <module>:28 -> main:25 calls top (jitted); top:19/20/21 -> mid:10 -> leaf:6 ...
    count, source = scan_before(HLO / "jaxlib-0.12.0.1.jit_top_nested.before_optimizations.txt", "jit_top")
    assert count == 9
    assert source == SourceLine("/src/deep.py", 25, "main")


def test_parents_are_printed_plus_one():
    tables = {
        "FileNames": {1: '"/src/deep.py"'},
        "FunctionNames": {1: '"<module>"', 2: '"main"', 3: '"top"', 4: '"mid"'},
        "FileLocations": {i: f"{{file_name_id=1 function_name_id={i} line={10 * i}}}" for i in range(1, 5)},
        # frame 4 (mid) was called from frame 3 (top), printed as parent 4; frame 1 is a root, printed 1.
        "StackFrames": {
            1: "{file_location_id=1 parent_frame_id=1}",
            2: "{file_location_id=2 parent_frame_id=2}",
            3: "{file_location_id=3 parent_frame_id=3}",
            4: "{file_location_id=4 parent_frame_id=4}",
        },
    }
    assert [f.function for f in _stack(tables, 4)] == ["<module>", "main", "top", "mid"]
    # A printer that writes true ids (0 for a root) is read as such.
    tables["StackFrames"] = {1: "{file_location_id=1 parent_frame_id=0}", 2: "{file_location_id=2 parent_frame_id=1}"}
    assert [f.function for f in _stack(tables, 2)] == ["<module>", "main"]


def test_old_and_flat_dumps():
    # 0.4.30: only the op's own line is in the metadata.
    assert scan_before(HLO / "jaxlib-0.4.30.jit_f_reduce.before_optimizations.txt", "jit_f") == (
        21,
        SourceLine("/src/q.py", 2),
    )
    # f was jitted at module level (<module>:3): the call site is that line.
    assert scan_before(HLO / "jaxlib-0.10.2.jit_f.before_optimizations.txt", "jit_f")[1] == SourceLine(
        "/src/p.py", 3, "<module>"
    )
    assert scan_before(HLO / "jaxlib-0.12.0.1.jit_f_reduce.before_optimizations.txt", "jit_f")[1].short() == "q.py:3"


def test_library_frames_are_skipped_and_missing_files_give_nothing(tmp_path):
    text = (HLO / "jaxlib-0.12.0.1.jit_top_nested.before_optimizations.txt").read_text()
    moved = tmp_path / "m.txt"
    moved.write_text(text.replace('1 "/src/deep.py"', '1 "/venv/lib/site-packages/lib.py"'))
    # Every frame is library code now: the call site is still reported rather than nothing.
    assert scan_before(moved, "jit_top")[1].line == 25
    assert scan_before(tmp_path / "absent.txt", "jit_top") == (None, None)


def test_program_frame_is_credited_with_the_library_frame_beside_it():
    from xlatools.run.dump_source import _creator, is_library

    lib = "/v/lib/python3.11/site-packages/optax/_src/base.py"
    frames = [
        SourceLine("/src/p.py", 3, "<module>"),
        SourceLine("/src/p.py", 9, "main"),
        SourceLine(lib, 90, "update_fn"),
        SourceLine(lib, 12, "inner"),
    ]
    assert _creator(frames, "jit_update_fn") == SourceLine("/src/p.py", 9, "main", SourceLine(lib, 90, "update_fn"))
    assert _creator(frames, "jit_update_fn").short() == "p.py:9 (via base.py:90)"
    # the program's own jitted function: no library frame beside it
    own = [SourceLine("/src/p.py", 3, "<module>"), SourceLine("/src/p.py", 5, "f")]
    assert _creator(own, "jit_f") == SourceLine("/src/p.py", 3, "<module>")
    # the standard library is not the program (a functools.partial frame, say)
    assert is_library("/usr/lib/python3.11/functools.py") and not is_library("/src/lib/python_tools/x.py")


def test_a_stack_that_holds_only_library_frames_gives_way_to_one_that_reaches_the_program(tmp_path):
    lib = "/v/lib/python3.11/site-packages/equinox/_jit.py"
    text = "\n".join(
        [
            "HloModule jit_solve",
            "",
            "FileNames",
            f'1 "{lib}"',
            '2 "/src/p.py"',
            "",
            "FunctionNames",
            '1 "fun_wrapped"',
            '2 "main"',
            "",
            "FileLocations",
            "1 {file_name_id=1 function_name_id=1 line=55}",
            "2 {file_name_id=2 function_name_id=2 line=7}",
            "",
            "StackFrames",
            "1 {file_location_id=1 parent_frame_id=0}",
            "2 {file_location_id=2 parent_frame_id=0}",
            "3 {file_location_id=1 parent_frame_id=2}",
            "",
            "ENTRY main {",
            '  a = f32[] parameter(0), metadata={op_name="x" stack_frame_id=1}',
            '  ROOT b = f32[] negate(a), metadata={op_name="y" stack_frame_id=3}',
            "}",
            "",
        ]
    )
    (tmp_path / "m.txt").write_text(text)
    count, source = scan_before(tmp_path / "m.txt", "jit_solve")
    assert count == 2 and source == SourceLine("/src/p.py", 7, "main", SourceLine(lib, 55, "fun_wrapped"))
