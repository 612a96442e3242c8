"""A stand-in for a GPU's TF32 on the CPU: not a GPU, a test target that rounds like one.

A GPU (Ampere and newer) runs an f32 dot or convolution whose operand precision is DEFAULT (not printed
in HLO text) or HIGH, or whose algorithm= names TF32, with its operands rounded to TF32 (8 exponent
bits, 10 mantissa bits) and f32 accumulation. The CPU computes every f32 dot in f32, so the `precision`
verdict has no real case on this machine. `interpreter(real, folder)` writes an interpreter that is
`real` with one difference: the replay target script (xlatools/replay/probes) compiles HLO text (and
StableHLO, as the HLO text it converts to) with an HLO `reduce-precision(x), exponent_bits=8,
mantissa_bits=10` inserted before each f32 operand of such an instruction (round to nearest even, as
TF32 conversion does). The text the target reports
(module.txt) stays the one it was given, so replay raises and compares that module, as on a GPU.

Written for the stand-in only, with xlatools.hlo.grammar (stdlib only; it runs in the target).
"""

from __future__ import annotations

import stat
from pathlib import Path

SITE = Path(__file__).resolve().parent / "site"
REPO = Path(__file__).resolve().parents[2]
EXPONENT_BITS, MANTISSA_BITS = 8, 10
NOTE = "stand-in for a GPU: f32 dot/convolution operands rounded to TF32"


def _tf32(inst) -> bool:
    from xlatools.hlo.values import operand_precision

    algorithm = inst.attributes.get("algorithm")
    if algorithm:
        return "tf32" in algorithm
    return operand_precision(inst.attributes.get("operand_precision")) != ["highest", "highest"]


def round_operands(text: str) -> tuple[str, int]:
    """`text` with each f32 operand of a dot/convolution a GPU would run in TF32 rounded first, and
    how many operands were rounded."""
    from xlatools.hlo.grammar import LineKind, parse_instruction, scan_lines

    shapes: dict[str, str] = {}
    out, rounded = [], 0
    for kind, line in scan_lines(text.splitlines()):
        inst = parse_instruction(line) if kind is LineKind.INSTRUCTION else None
        if inst is None:
            out.append(line)
            continue
        shapes[inst.name] = inst.shape
        if inst.opcode not in ("dot", "convolution") or not _tf32(inst):
            out.append(line)
            continue
        percent = "%" if "%" in inst.payload or line.lstrip().startswith(("%", "ROOT %")) else ""
        indent = line[: len(line) - len(line.lstrip())]
        names = []
        for i, operand in enumerate(inst.operands):
            shape = shapes.get(operand, "")
            if not shape.startswith("f32["):
                names.append(f"{percent}{operand}")
                continue
            new = f"{inst.name}.tf32.{i}"
            out.append(
                f"{indent}{percent}{new} = {shape} reduce-precision({percent}{operand}), "
                f"exponent_bits={EXPONENT_BITS}, mantissa_bits={MANTISSA_BITS}"
            )
            names.append(f"{percent}{new}")
            rounded += 1
        out.append(line.replace(f"{inst.opcode}({inst.payload})", f"{inst.opcode}({', '.join(names)})", 1))
    return "\n".join(out) + "\n", rounded


def interpreter(real: str, folder: Path) -> str:
    """An interpreter script: `real` with the stand-in installed (see the module's docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "python-tf32-standin"
    script.write_text(
        f"#!/bin/sh\n# {NOTE} (tests/standin/tf32.py)\n"
        f'PYTHONPATH="{SITE}:{REPO}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{real}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(script)
