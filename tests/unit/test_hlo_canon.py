"""Canonical HLO text on real dumps (tests/fixtures/hlo: jaxlib 0.4.30, 0.10.2 and 0.12.0.1, CPU)."""

from __future__ import annotations

from pathlib import Path

from xlatools.run.hlo_canon import canonical_hlo, fingerprint

HLO = Path(__file__).resolve().parents[1] / "fixtures" / "hlo"


def read(name: str) -> str:
    return (HLO / name).read_text()


def test_metadata_names_and_stack_frames_are_gone():
    text = canonical_hlo(read("jaxlib-0.10.2.jit_f.before_optimizations.txt"))
    for gone in ("metadata", "stack_frame_id", "FileNames", "jit_f", "%", "dot_general.1", "x.1"):
        assert gone not in text
    assert "ROOT v11 = f32[4,4]{1,0} add(v5, v10)" in text
    assert "dot(v0, v1), lhs_contracting_dims={1}, rhs_contracting_dims={0}" in text


def test_the_same_program_has_one_fingerprint_across_jaxlib_versions():
    old = read("jaxlib-0.4.30.jit_f_reduce.before_optimizations.txt")
    new = read("jaxlib-0.12.0.1.jit_f_reduce.before_optimizations.txt")
    assert old != new  # different printers, names and metadata
    assert canonical_hlo(old) == canonical_hlo(new)
    assert fingerprint(old) == fingerprint(new)


def test_renaming_and_moved_source_do_not_change_the_fingerprint_but_math_does():
    text = read("jaxlib-0.10.2.jit_f.before_optimizations.txt")
    renamed = (
        text.replace("%dot_general.1", "%my_dot.7").replace("/src/p.py", "/elsewhere/q.py").replace("jit_f", "jit_g")
    )
    assert fingerprint(renamed) == fingerprint(text)
    changed = text.replace("constant(3)", "constant(4)")
    assert fingerprint(changed) != fingerprint(text)
    swapped = text.replace("dot(%x.1, %y.1)", "dot(%y.1, %x.1)")
    assert fingerprint(swapped) != fingerprint(text)


def test_called_computations_are_renamed_where_they_are_referenced():
    text = canonical_hlo(read("jaxlib-0.10.2.jit_f.cpu_after_optimizations.txt"))
    assert "fusion(v12, v13), kind=kLoop, calls=c0" in text
    assert "fused_computation" not in text
    assert "to_apply=c0" in canonical_hlo(read("jaxlib-0.4.30.jit_f_reduce.before_optimizations.txt"))


def test_an_opcode_that_shares_a_computation_name_stays_an_opcode():
    text = "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT add = f32[] add(a, b)\n}\n"
    assert "ROOT v2 = f32[] add(v0, v1)" in canonical_hlo(text)


def test_long_tuple_signatures_are_renamed_and_callback_pointers_do_not_count():
    """Issue 19: `/*index=5*/` in a signature hid the computation from renaming; jaxlib 0.4.x passes host
    callbacks a process pointer (a constant operand and the backend_config), another in every run."""

    def module(body_name: str, pointer: int) -> str:
        return (
            f"HloModule m\n\n%{body_name} (p: (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])) -> f32[] {{\n"
            f"  %p = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) parameter(0)\n"
            f"  ROOT %g = f32[] get-tuple-element(%p), index=5\n}}\n\n"
            f"ENTRY %main (x: f32[]) -> f32[] {{\n  %x = f32[] parameter(0)\n"
            f"  %c = s64[] constant({pointer})\n"
            f'  %cb = (f32[]) custom-call(%c, %x), custom_call_target="xla_python_cpu_callback", backend_config="{pointer}"\n'
            f"  %t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(%x, %x, %x, %x, %x, %x)\n"
            f"  ROOT %r = f32[] call(%t), to_apply=%{body_name}\n}}\n"
        )

    assert fingerprint(module("region_4.23", 94156765220672)) == fingerprint(module("region_2.10", 93954128211680))
    assert "region" not in canonical_hlo(module("region_4.23", 1))
