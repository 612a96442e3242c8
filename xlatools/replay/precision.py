"""Precision is not a miscompile: dots and convolutions below full precision, raised to it, and the verdict.

On a GPU (Ampere and newer) an f32 `dot` or `convolution` whose operand precision is DEFAULT (which text
HLO does not print) or HIGH, or whose `algorithm=` names fewer bits than f32 (dot_tf32_tf32_f32,
dot_bf16_bf16_f32...), runs in TF32: 10 mantissa bits. Its results differ from the CPU's (which computes
them in f32) by far more than a replay's tolerance, and that is the program's precision setting, not
the compiler. Every verdict that compares a test with a reference (replay, `replay --isolate`, reduce's
mismatch oracle, repro packs, bisect steps, triage) decides with these functions:

- `reduced(text)`: the instructions below full precision, and why each is;
- `raise_precision(text)`: the same text with each of them at full precision
  (`operand_precision={highest,highest}`, a reduced `algorithm=` removed), every other byte kept;
- `classify(...)`: `precision` when the test matches every reference at full precision, else `mismatch`.

Pure: text in, text and records out; the runs are the callers'.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlatools.records.replay import Comparison, PrecisionCheck, RaisedInstruction, RunRecord
from xlatools.replay.outcome import difference
from xlatools.vocab import PrecisionMode, ReplayOutcome

RULE = (
    "f32 dot/convolution with operand precision DEFAULT (not printed in HLO text) or HIGH, or a reduced-precision "
    "algorithm=, may run in TF32 (10 mantissa bits) on a GPU; raised: operand_precision={highest,highest}, "
    "reduced algorithm= removed, so it runs in f32"
)
OPCODES = frozenset({"dot", "convolution"})
FULL_TYPES = frozenset({"f32", "c64"})  # the element types TF32 stands in for
FULL_ALGORITHMS = frozenset({"dot_f32_f32_f32", "dot_f64_f64_f64"})
HIGHEST = "{highest,highest}"


def mode_of(value: PrecisionMode | str | None) -> PrecisionMode:
    """A request's --precision (None: a request that did not say, auto)."""
    return PrecisionMode(value or PrecisionMode.AUTO)


def _element_type(shape: str) -> str:
    return shape.strip().split("[", 1)[0]


@dataclass(frozen=True)
class Found:
    line: int  # index in text.splitlines()
    raised: RaisedInstruction
    drop_algorithm: bool


def _scan(text: str) -> list[Found]:
    from xlatools.hlo.grammar import LineKind, computation_header, parse_instruction, scan_lines
    from xlatools.hlo.values import operand_precision

    shapes: dict[str, str] = {}
    candidates = []
    computation = ""
    for number, (kind, line) in enumerate(scan_lines(text.splitlines())):
        if kind is LineKind.COMPUTATION:
            computation = (computation_header(line) or ("", False))[0]
        if kind is not LineKind.INSTRUCTION:
            continue
        inst = parse_instruction(line)
        if inst is None:
            continue
        shapes[inst.name] = inst.shape
        if inst.opcode in OPCODES:
            candidates.append((number, computation, inst))
    found = []
    for number, computation, inst in candidates:
        types = {_element_type(shapes[o]) for o in inst.operands if o in shapes} or {_element_type(inst.shape)}
        if not types & FULL_TYPES:
            continue  # bf16, f16, f64, integer operands: nothing a TF32 unit would change
        algorithm = inst.attributes.get("algorithm")
        precision = operand_precision(inst.attributes.get("operand_precision"))
        if algorithm and algorithm not in FULL_ALGORITHMS:
            was, drop = f"algorithm={algorithm}", True
        elif algorithm:
            continue  # an explicit f32 (or f64) algorithm is full precision whatever the operand precision says
        elif not precision:
            was, drop = "operand precision DEFAULT (not printed)", False
        elif any(p != "highest" for p in precision):
            was, drop = f"operand_precision={{{','.join(precision)}}}", False
        else:
            continue
        found.append(
            Found(number, RaisedInstruction(name=inst.name, opcode=inst.opcode, computation=computation, was=was), drop)
        )
    return found


def reduced(text: str) -> list[RaisedInstruction]:
    """The dots and convolutions of `text` below full precision, in printed order."""
    return [f.raised for f in _scan(text)]


def raise_precision(text: str) -> tuple[str, list[RaisedInstruction]]:
    """`text` with every dot and convolution below full precision raised to it, and which they were.
    Lines other than theirs are kept byte for byte (line endings included)."""
    from xlatools.hlo.grammar import remove_attribute, set_attribute

    found = _scan(text)
    if not found:
        return text, []
    lines = text.splitlines(keepends=True)
    for f in found:
        line = lines[f.line]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        if f.drop_algorithm:
            body = remove_attribute(body, "algorithm")
        lines[f.line] = set_attribute(body, "operand_precision", HIGHEST) + ending
    return "".join(lines), [f.raised for f in found]


def names(raised: list[RaisedInstruction], limit: int = 12) -> str:
    shown = ", ".join(r.name for r in raised[:limit])
    return shown + (f" and {len(raised) - limit} more" if len(raised) > limit else "")


def _errors(comparisons: list[Comparison]) -> str:
    parts = []
    for c in comparisons:
        if c.message is not None:
            parts.append(f"{c.against}: {c.message}")
        else:
            parts.append(f"{c.against}: " + (f"ok, max abs {c.max_abs_error:.3g}" if c.ok else difference(c, "")))
    return "; ".join(parts) or "no comparison"


def classify(as_compiled: list[Comparison], highest: RunRecord | None) -> tuple[ReplayOutcome, str]:
    """The verdict on a test that differed from its references as compiled, from the same test at full
    precision (`highest`: its run, compared with the same references' outputs), and why."""
    if highest is None or highest.failure:
        why = f"{highest.failure}: {highest.message}" if highest else "it did not run"
        return ReplayOutcome.MISMATCH, f"the module at full precision could not be compared ({why}): still a mismatch"
    if highest.comparisons and all(c.ok for c in highest.comparisons):
        return ReplayOutcome.PRECISION, (
            f"matches at full precision ({_errors(highest.comparisons)}); as compiled "
            f"{_errors(as_compiled)}: the program's precision setting, not the compiler"
        )
    return ReplayOutcome.MISMATCH, (
        f"still differs at full precision ({_errors(highest.comparisons)}); as compiled "
        f"{_errors(as_compiled)}: a real suspect"
    )


def check(
    mode: PrecisionMode, raised: list[RaisedInstruction], atol: float, rtol: float, module: str | None = None
) -> PrecisionCheck:
    """The record a replay fills in for one module (verdict, comparisons and run added by the caller)."""
    check = PrecisionCheck(
        mode=PrecisionMode(mode), rule=RULE, raised=list(raised), atol=atol, rtol=rtol, module=module
    )
    if mode == PrecisionMode.HIGHEST:
        check.note = (
            f"--precision highest: {len(raised)} instruction(s) raised to full precision ({names(raised)})"
            if raised
            else "--precision highest: every dot and convolution was at full precision already"
        )
    return check


def needs_second_run(
    mode: PrecisionMode | None, outcome: ReplayOutcome, as_compiled: list[Comparison], snapshot_ok: bool
) -> bool:
    """auto: a test that mismatched its references (and only them: a snapshot recorded on the same kind of device
    shares its precision) is run again at full precision."""
    return (
        mode_of(mode) == PrecisionMode.AUTO
        and outcome == ReplayOutcome.MISMATCH
        and snapshot_ok
        and any(not c.ok for c in as_compiled)
    )
