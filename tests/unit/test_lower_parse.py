"""`xlatools lower` input parsing: malformed shapes and constants name the offending part."""

from pathlib import Path

import pytest

from xlatools.errors import UsageError
from xlatools.run.lower import parse_constants, parse_function, parse_input_shapes, plan_lower


def test_shapes():
    assert parse_input_shapes('[("x", "f32[2,4,3]"), ("n", "s32[]"), ("b", "bf16[ 8 ]")]') == [
        {"name": "x", "dtype": "float32", "shape": [2, 4, 3]},
        {"name": "n", "dtype": "int32", "shape": []},
        {"name": "b", "dtype": "bfloat16", "shape": [8]},
    ]


@pytest.mark.parametrize(
    "text,part",
    [
        ('[("x", "f32[2,4")]', "item 0 ('x'): 'f32[2,4' is not a shape"),
        ('[("x", "q8[2]")]', "unknown element type 'q8'"),
        ('[("x", "f32[2]"), ("y")]', "item 1: 'y' is not a (name, shape) pair"),
        ('[("x", "f32[2]"), ("x", "f32[3]")]', "'x' is given twice"),
        ('[("1x", "f32[2]")]', "'1x' is not a Python argument name"),
        ('[("x", "f32[2]"', "not a Python list literal"),
        ('"f32[2]"', "expected a list"),
    ],
)
def test_bad_shapes(text, part):
    with pytest.raises(UsageError) as info:
        parse_input_shapes(text)
    assert part in info.value.message


def test_constants():
    assert parse_constants('{"alpha": 2.0, "v": [1, 2]}', []) == {"alpha": 2.0, "v": [1, 2]}
    assert parse_constants("{'beta': 3}", []) == {"beta": 3}
    for text, part in (
        ("{alpha: 2}", "neither JSON nor a Python dict"),
        ("[1]", "expected a mapping"),
        ('{"x": 1}', "'x' is also in --input-shapes"),
        ('{"a": {"b": 1}}', "--constants['a']"),
        ('{"a": [1, "s"]}', "numbers only"),
    ):
        with pytest.raises(UsageError) as info:
            parse_constants(text, [{"name": "x"}])
        assert part in info.value.message


def test_function_refs(tmp_path):
    (tmp_path / "m.py").write_text("def f(): pass\n")
    assert parse_function("m.py:f", tmp_path) == ("file", str(tmp_path / "m.py"), "f")
    assert parse_function("pkg.mod:Model.apply", tmp_path) == ("module", "pkg.mod", "Model.apply")
    for bad, part in (
        ("m.py", "expected FILE.py:FUNCTION"),
        ("gone.py:f", "file not found"),
        ("m.py:1f", "not a Python name"),
    ):
        with pytest.raises(UsageError, match=part):
            parse_function(bad, tmp_path)


def test_format_rules(tmp_path):
    (tmp_path / "m.py").write_text("def f(): pass\n")
    with pytest.raises(UsageError, match="--ir-dest .* needs --ir-format hlo"):
        plan_lower("m.py:f", None, None, "jaxpr", False, "out.pb", tmp_path)
    with pytest.raises(UsageError, match="--optimized .* needs --ir-format hlo"):
        plan_lower("m.py:f", None, None, "stablehlo", True, None, tmp_path)
    with pytest.raises(UsageError, match="expected one of hlo, stablehlo, jaxpr"):
        plan_lower("m.py:f", None, None, "llvm", False, None, tmp_path)
    assert plan_lower("m.py:f", None, None, "HLO", True, None, Path(tmp_path)).ir_format == "hlo"
