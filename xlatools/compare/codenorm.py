"""Emitted code (LLVM IR, PTX, kernel MLIR, Triton IR, thunk sequences) with what differs between two
compiles of the same code left out, and the numerics-relevant flags it carries.

What one run differs from the next in, seen in real dumps (jaxlib 0.10.2 CPU, the flax + optax program,
two runs with the same flags): the `; ModuleID` / `source_filename` lines (the module's and kernel's names,
which carry ids), the numbering of metadata nodes (`!dereferenceable !4` in one run is `!6` in the next)
and the metadata attached to each instruction. The rules below drop exactly those; each says what it
dropped, so a comparison can say what it normalised. Code that still differs after them is compared once
more as a bag of instructions with every value name and number masked (`same_shape`): equal there, the two
files hold the same instructions with other operands, names or order (one such kernel differs between two
identical runs of 0.10.2: `call_computation_kernel_module` reads its buffers through other argument slots),
which may be nondeterministic code generation or a changed constant: reported apart, never as the same.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from xlatools.hlo.dump_names import DumpKind

# A kind of emitted code, as people name it, and the rules that apply to it.
KIND_NAMES = {
    DumpKind.LLVM_IR: "LLVM IR",
    DumpKind.PTX: "PTX",
    DumpKind.KERNEL_MLIR: "kernel MLIR",
    DumpKind.TRITON_IR: "Triton IR",
    DumpKind.THUNK_SEQUENCE: "thunk sequence",
}
MAX_NORMALISED_BYTES = 32 << 20  # larger files are compared by their bytes only


@dataclass(frozen=True)
class Rule:
    name: str  # what it leaves out, in words (reported)
    pattern: re.Pattern
    replacement: str = ""


def _rule(name: str, pattern: str, replacement: str = "") -> Rule:
    return Rule(name, re.compile(pattern, re.MULTILINE), replacement)


_LLVM = [
    _rule("module ids (ModuleID, source_filename)", r"^(?:; ModuleID = .*|source_filename = .*)$"),
    # `, !alias.scope !6` `, !dbg !12` `, !range !{...}` after an instruction; `!N = ...` and `!name = ...` nodes.
    _rule("metadata (node numbers and attachments)", r",\s*![A-Za-z_.][\w.]*\s+!(?:\d+|\{[^}\n]*\})"),
    _rule("metadata (node numbers and attachments)", r"^![\w.]+ = .*$"),
    _rule("metadata (node numbers and attachments)", r"(?<=metadata )!\d+\b", "!_"),  # an intrinsic's argument
    _rule("debug records", r"^\s*#dbg_\w+\(.*$"),
    # A pointer baked into the code (a JIT's constant address): `inttoptr (i64 140234567891234 to ptr)`.
    _rule("addresses", r"\binttoptr \((i\d+) \d{9,}\b", r"inttoptr (\1 <address>"),
]
_PTX = [
    _rule("comments (compiler build, dates)", r"//.*$"),
    _rule("debug line directives (.loc, .file)", r"^\s*\.(?:loc|file)\b.*$"),
]
_MLIR = [
    _rule("locations (loc(...), #loc)", r"^#loc\w*\s*=.*$"),
    _rule("locations (loc(...), #loc)", r"\s*\bloc\((?:[^()\n]|\((?:[^()\n]|\([^()\n]*\))*\))*\)"),
    _rule("comments", r"^\s*//.*$"),
]
RULES: dict[str, list[Rule]] = {"llvm": _LLVM, "ptx": _PTX, "mlir": _MLIR, "thunks": []}
_BLANK = re.compile(r"[ \t]+$|^\s*\n", re.MULTILINE)

# Flags that change numerics, counted per side: LLVM fast-math flags on floating-point instructions,
# PTX's approximate and flush-to-zero forms.
_LLVM_FLAGS = re.compile(
    r"=\s+(?:tail\s+|musttail\s+|notail\s+)?[a-z][\w.]*((?:\s+(?:fast|reassoc|nnan|ninf|nsz|arcp|contract|afn))+)\b"
)
_PTX_FLAGS = re.compile(r"^\s*[a-z][\w.]*?\.(approx|ftz)\b", re.MULTILINE)
_NAMES = re.compile(r"%[\w.$-]+|\bf?0x[0-9A-Fa-f]+\b|\b\d[\w.+-]*\b")


def dialect(kind: DumpKind, tail: str) -> str:
    """Which rules read a file: llvm, ptx, mlir or thunks."""
    if kind is DumpKind.LLVM_IR or tail.endswith((".ll", ".llir", ".llir.txt")):
        return "llvm"
    if kind is DumpKind.PTX:
        return "ptx"
    if kind is DumpKind.THUNK_SEQUENCE:
        return "thunks"
    return "mlir"


@dataclass(frozen=True)
class Normalised:
    text: str
    applied: frozenset[str]  # the rules that removed or replaced something


def normalise(text: str, which: str) -> Normalised:
    applied = set()
    for rule in RULES[which]:
        text, count = rule.pattern.subn(rule.replacement, text)
        if count:
            applied.add(rule.name)
    return Normalised(_BLANK.sub("", text), frozenset(applied))


def same_shape(a: str, b: str) -> bool:
    """The same instructions in any order once value names and numbers are masked (see the module's docstring)."""
    return Counter(_NAMES.sub("#", a).splitlines()) == Counter(_NAMES.sub("#", b).splitlines())


def numerics_flags(text: str, which: str) -> Counter[str]:
    """How many instructions carry each numerics flag: LLVM fast-math flags, PTX `.approx` / `.ftz`."""
    found: Counter[str] = Counter()
    if which == "llvm":
        for match in _LLVM_FLAGS.finditer(text):
            found.update(set(match[1].split()))
    elif which == "ptx":
        found.update(match[1] for match in _PTX_FLAGS.finditer(text))
    return found
