"""What the values of HLO instruction attributes say: metadata fields, operand precisions, backend configs
(JSON, or text), called computations, shapes without layouts. Pure text functions (xlatools/hlo/grammar.py
finds the values in a line)."""

from __future__ import annotations

import re

STRING = r'"(?:[^"\\]|\\.)*"'  # a quoted string, backslash escapes inside
SINGLE_CALLS = ("to_apply", "calls", "condition", "body", "true_computation", "false_computation", "comparator")
LIST_CALLS = ("branch_computations", "called_computations")
_METADATA_FIELD = re.compile(rf"(?P<key>\w+)=(?P<value>{STRING}|[^\s}}]+)")


def shape_without_layout(shape: str) -> str:
    """`f64[8]{0}` -> `f64[8]`, `(f32[2]{0}, s32[])` -> `(f32[2],s32[])`: for comparing shapes across layouts."""
    return re.sub(r"\{[^{}]*\}", "", shape).replace(" ", "")


def called_computations(attributes: dict[str, str]) -> list[str]:
    names = []
    for key, value in attributes.items():
        if key in SINGLE_CALLS:
            names.append(value.strip().lstrip("%"))
        elif key in LIST_CALLS:
            names += [n.strip().lstrip("%") for n in value.strip().strip("{}").split(",") if n.strip()]
    return names


def metadata_fields(value: str) -> dict[str, str]:
    """`{op_type="dot" op_name="jit(f)/dot" source_line=3}` -> key -> value (strings unquoted, escapes kept)."""
    out = {}
    for found in _METADATA_FIELD.finditer(value):
        text = found["value"]
        out[found["key"]] = text[1:-1] if text.startswith('"') else text
    return out


def operand_precision(value: str | None) -> list[str]:
    """`{highest,highest}` -> ["highest", "highest"]; [] when absent (DEFAULT is not printed)."""
    return [p.strip() for p in (value or "").strip().strip("{}").split(",") if p.strip()]


def backend_config(value: str | None) -> dict | str | None:
    """A backend_config value: the JSON object (printed bare in braces, or in a string) as a dict, else
    the text itself (proto text, or the number jaxlib 0.4 prints for host callbacks)."""
    import json

    if value is None:
        return None
    text = value.strip()
    if len(text) > 1 and text.startswith('"') and text.endswith('"'):
        try:
            text = json.loads(text)
        except ValueError:
            text = text[1:-1]
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            return text
        return parsed if isinstance(parsed, dict) else text
    return text
