"""`xlatools lower`: the classic jax_to_ir step, planned here and run in the target.

Parsing and checking of FN, --input-shapes and --constants happen here (pure),
so malformed input fails with exit 2 naming the offending part before any
interpreter starts. execute_lower() runs probes/lower.py, which does the jax work
in the target interpreter, and brings back its answer and the IR bytes.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Union

from xlatools.errors import UsageError
from xlatools.vocab import IrFormat, Platform

if TYPE_CHECKING:
    from xlatools.console import Reporter

DTYPES = {
    "pred": "bool",
    "s8": "int8",
    "s16": "int16",
    "s32": "int32",
    "s64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
}
IR_FORMATS = tuple(member.value for member in IrFormat)
_SHAPE = re.compile(r"^\s*(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,\s]*)\]\s*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHAPES_EXAMPLE = """--input-shapes '[("x", "f32[2,4,3]"), ("y", "f32[3,2]")]'"""


class LowerInput(TypedDict):
    """One positional input: the JSON the target's probe reads (a TypedDict: it is that JSON)."""

    name: str
    dtype: str  # a numpy dtype name, e.g. float32
    shape: list[int]


# A keyword constant as --constants gives it: a number, a string, or a list of numbers.
Constant = Union[bool, int, float, str, list["Constant"]]


@dataclass(kw_only=True)
class LowerRequest:
    """What probes/lower.py is asked to do (written to it as JSON)."""

    source_kind: str  # "file" or "module"
    source: str
    function: str
    inputs: list[LowerInput]
    constants: dict[str, Constant]
    ir_format: IrFormat
    optimized: bool
    want_proto: bool = False  # --ir-dest: also a serialized HloModuleProto
    text_out: str | None = None  # filled by execute_lower: files in its temporary folder
    proto_out: str | None = None
    extra_sys_path: list[str] = field(default_factory=list)


def parse_function(ref: str, cwd: Path) -> tuple[str, str, str]:
    """`path/to/file.py:fn` or `package.module:fn` -> (kind, source, function)."""
    source, sep, function = ref.rpartition(":")
    if not sep or not source or not function:
        raise UsageError(
            f"FN {ref!r}: expected FILE.py:FUNCTION or MODULE:FUNCTION", hint="e.g. model.py:f or mypkg.model:f"
        )
    if not all(_IDENT.match(part) for part in function.split(".")):
        raise UsageError(f"FN {ref!r}: '{function}' is not a Python name")
    if source.endswith(".py") or "/" in source:
        path = Path(source).expanduser()
        path = path if path.is_absolute() else cwd / path
        if not path.is_file():
            raise UsageError(f"FN {ref!r}: file not found: {source}")
        return "file", str(path), function
    if not all(_IDENT.match(part) for part in source.split(".")):
        raise UsageError(f"FN {ref!r}: '{source}' is neither a .py file nor a module name")
    return "module", source, function


def parse_shape(text: str, where: str) -> tuple[str, list[int]]:
    match = _SHAPE.match(text) if isinstance(text, str) else None
    if not match:
        raise UsageError(f"{where}: {text!r} is not a shape", hint='write DTYPE[DIMS], e.g. "f32[2,4,3]" or "s32[]"')
    dtype = match["dtype"]
    if dtype not in DTYPES:
        raise UsageError(f"{where}: unknown element type '{dtype}' in {text!r}", hint=f"known: {', '.join(DTYPES)}")
    dims = [d.strip() for d in match["dims"].split(",") if d.strip()]
    return DTYPES[dtype], [int(d) for d in dims]


def parse_input_shapes(text: str | None) -> list[LowerInput]:
    if not text:
        return []
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise UsageError(
            f"--input-shapes: not a Python list literal ({exc.msg if hasattr(exc, 'msg') else exc})",
            hint=f"e.g. {_SHAPES_EXAMPLE}",
        ) from None
    if not isinstance(value, (list, tuple)):
        raise UsageError("--input-shapes: expected a list of (name, shape) pairs", hint=f"e.g. {_SHAPES_EXAMPLE}")
    inputs, seen = [], set()
    for position, item in enumerate(value):
        where = f"--input-shapes item {position}"
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)):
            raise UsageError(f"{where}: {item!r} is not a (name, shape) pair", hint=f"e.g. {_SHAPES_EXAMPLE}")
        name, shape = item
        if not _IDENT.match(name):
            raise UsageError(f"{where}: {name!r} is not a Python argument name")
        if name in seen:
            raise UsageError(f"{where}: argument '{name}' is given twice")
        seen.add(name)
        dtype, dims = parse_shape(shape, f"{where} ('{name}')")
        inputs.append(LowerInput(name=name, dtype=dtype, shape=dims))
    return inputs


def _constant(value: object, where: str) -> Constant:
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return value
    if isinstance(value, (list, tuple)) and value:
        items = [_constant(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if any(isinstance(i, str) for i in items):
            raise UsageError(f"{where}: arrays may hold numbers only")
        return items
    if isinstance(value, str):
        return value
    raise UsageError(f"{where}: {value!r} is not a number, string, or list of numbers")


def parse_constants(text: str | None, inputs: list[LowerInput]) -> dict[str, Constant]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise UsageError(
                f"--constants: {text!r} is neither JSON nor a Python dict literal",
                hint="""e.g. --constants '{"alpha": 2.0, "beta": 3.0}'""",
            ) from None
    if not isinstance(value, dict):
        raise UsageError(
            "--constants: expected a mapping of argument names to values", hint="""e.g. '{"alpha": 2.0}'"""
        )
    names = {i["name"] for i in inputs}
    constants = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _IDENT.match(key):
            raise UsageError(f"--constants: {key!r} is not a Python argument name")
        if key in names:
            raise UsageError(
                f"--constants: '{key}' is also in --input-shapes", hint="an argument is either an input or a constant"
            )
        constants[key] = _constant(item, f"--constants['{key}']")
    return constants


def plan_lower(
    fn: str,
    input_shapes: str | None,
    constants: str | None,
    ir_format: str,
    optimized: bool,
    ir_dest: str | None,
    cwd: Path,
) -> LowerRequest:
    ir_format = ir_format.lower()
    if ir_format not in IR_FORMATS:
        raise UsageError(f"--ir-format {ir_format}: expected one of {', '.join(IR_FORMATS)}")
    ir_format = IrFormat(ir_format)
    if ir_dest and ir_format != "hlo":
        raise UsageError(f"--ir-dest writes a serialized HloModuleProto; it needs --ir-format hlo, not {ir_format}")
    if optimized and ir_format != "hlo":
        raise UsageError(f"--optimized shows XLA's optimised HLO; it needs --ir-format hlo, not {ir_format}")
    kind, source, function = parse_function(fn, cwd)
    inputs = parse_input_shapes(input_shapes)
    return LowerRequest(
        source_kind=kind,
        source=source,
        function=function,
        inputs=inputs,
        constants=parse_constants(constants, inputs),
        ir_format=ir_format,
        optimized=optimized,
        want_proto=bool(ir_dest),
        extra_sys_path=[str(cwd)],
    )


def cost_rows(cost: dict[str, float]) -> list[tuple[str, float]]:
    """The headline numbers of XLA's cost analysis (per-operand details left out)."""
    keys = ("flops", "transcendentals", "bytes accessed", "optimal_seconds", "utilization")
    return [(key, cost[key]) for key in keys if key in cost]


@dataclass(kw_only=True)
class LowerAnswer:
    """What probes/lower.py answered about a lowering that worked."""

    ok: bool = True
    jax: str | None = None
    backend: str | None = None
    cost_analysis: dict[str, float] | None = None  # absent for jaxpr (nothing is compiled)
    memory_analysis: dict[str, int] | None = None
    proto_bytes: int | None = None  # with --ir-dest


@dataclass
class Lowered:
    """What the target answered, the IR text, and the serialized proto if asked for."""

    answer: LowerAnswer
    text: str
    proto: bytes | None


def execute_lower(
    request: LowerRequest,
    label: str,
    python: str,
    platform: Platform,
    gpu_platform: str,
    timeout: float,
    reporter: Reporter,
) -> Lowered:
    """Run probes/lower.py in the target interpreter; errors (naming `label`, the FN as given) become XlaToolsError subclasses."""
    import os
    import subprocess
    import tempfile

    from xlatools.errors import TimedOut, XlaToolsError
    from xlatools.proctree import run_captured
    from xlatools.records.base import to_json
    from xlatools.run.frontends import jax_gpu_platforms
    from xlatools.run.target import PROBES

    env = dict(os.environ)
    if platform == Platform.CPU:
        env["JAX_PLATFORMS"] = "cpu"
    elif platform == Platform.GPU:
        env["JAX_PLATFORMS"] = jax_gpu_platforms(gpu_platform)
    with tempfile.TemporaryDirectory(prefix="xlatools-lower-") as tmp:
        request.text_out = os.path.join(tmp, "ir.txt")
        request.proto_out = os.path.join(tmp, "ir.pb") if request.want_proto else None
        request_path, answer_path = os.path.join(tmp, "request.json"), os.path.join(tmp, "answer.json")
        with open(request_path, "w") as handle:
            json.dump(to_json(request), handle)
        try:
            proc = run_captured([python, str(PROBES / "lower.py"), request_path, answer_path], env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimedOut(f"lowering {label} took longer than {timeout:g} s", hint="raise --timeout") from None
        try:
            with open(answer_path) as handle:
                answer = json.load(handle)
        except (OSError, ValueError):
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            raise XlaToolsError(f"lowering {label} crashed (exit {proc.returncode}): {tail}") from None
        if not answer.get("ok"):
            if proc.stderr.strip() and answer.get("kind") != "usage":
                reporter.info(proc.stderr.rstrip())  # the target's traceback, before the one-line error
            cls = UsageError if answer.get("kind") == "usage" else XlaToolsError
            raise cls(f"lowering {label} failed: {answer.get('message')}")
        text = Path(request.text_out).read_text()
        proto = Path(request.proto_out).read_bytes() if request.proto_out else None
    known = {"jax", "backend", "cost_analysis", "memory_analysis", "proto_bytes"}
    return Lowered(LowerAnswer(**{key: value for key, value in answer.items() if key in known}), text, proto)
