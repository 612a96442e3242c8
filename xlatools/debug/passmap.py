"""HLO pass name -> the C++ class and the function a pass starts in, read from the target's
own symbol table (never from a table kept by hand).

- Pass classes: classes whose RTTI (typeinfo) chain reaches `xla::HloPassInterface`; the base
  of each class is read from its typeinfo, a pointer the loader relocates.
- Their names: the machine code of each class's `name() const`, which for a constant name loads
  a string literal's address and its length (x86-64: `lea rip-relative` + `mov $len`); the literal
  is read from the file. A class without its own name() has its base's.
- Their entry: the class's own `RunImpl(HloModule*, ...)` (jaxlib >= ~0.5) or `Run(HloModule*, ...)`
  (older), else the nearest base's. Several passes can share an entry (the expanders all run
  `OpExpanderPass::RunImpl`): the breakpoint then checks the object's class (its vtable).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from xlatools.debug.elfsyms import ElfImage, Symbol, demangle

ROOT = "_ZTIN3xla16HloPassInterfaceE"
_ENTRY_PATTERNS = (b"7RunImplEPNS_9HloModuleE", b"3RunEPNS_9HloModuleE")
_NAME_SUFFIX = b"4nameEv"
CACHE_VERSION = 1


@dataclass(frozen=True)
class PassClass:
    cls: str  # demangled, e.g. xla::AlgebraicSimplifier
    name: str | None  # the pass name (as dumps and --xla_disable_hlo_passes spell it); None: not a constant
    name_from: str | None  # the class whose name() gave it (cls or a base)
    entry: str | None  # mangled symbol of the function the pass starts in
    entry_display: str | None  # e.g. xla::OpExpanderPass::RunImpl
    entry_from: str | None  # the class that defines the entry (cls or a base)


@dataclass
class PassMap:
    library: str
    machine: str
    full_symtab: bool
    classes: list[PassClass] = field(default_factory=list)
    note: str | None = None  # why names could not be read, when they could not

    def named(self) -> dict[str, list[PassClass]]:
        by_name: dict[str, list[PassClass]] = {}
        for item in self.classes:
            if item.name:
                by_name.setdefault(item.name, []).append(item)
        return dict(sorted(by_name.items()))


def decode_name_x86_64(code: bytes, address: int) -> tuple[int, int] | None:
    """(literal address, length) when `code` at `address` returns a constant string_view."""
    pointer = length = None
    at = 0
    while at < len(code):
        rest = code[at:]
        if rest[:1] == b"\xc3":  # ret
            return (pointer, length) if pointer is not None and length is not None else None
        if rest[:4] == b"\xf3\x0f\x1e\xfa":  # endbr64
            at += 4
        elif rest[:1] in (b"\x55", b"\x5d"):  # push/pop %rbp
            at += 1
        elif rest[:3] == b"\x48\x89\xe5":  # mov %rsp,%rbp
            at += 3
        elif len(rest) >= 7 and rest[0] in (0x48, 0x4C) and rest[1] == 0x8D and rest[2] & 0xC7 == 0x05:
            pointer = address + at + 7 + struct.unpack("<i", rest[3:7])[0]  # lea disp32(%rip),%reg
            at += 7
        elif len(rest) >= 5 and 0xB8 <= rest[0] <= 0xBF:  # mov $imm32,%reg
            length = struct.unpack("<I", rest[1:5])[0]
            at += 5
        elif rest[:2] in (b"\x31\xc0", b"\x31\xd2"):  # xor: an empty name
            length = 0
            at += 2
        else:
            return None
    return None


def _literal(image: ElfImage, symbol: Symbol) -> str | None:
    if image.machine != "EM_X86_64":
        return None
    code = image.read(symbol.address, 48)
    found = decode_name_x86_64(code, symbol.address) if code else None
    if not found or not 0 < found[1] <= 200:
        return None
    text = image.read(found[0], found[1])
    if not text or not all(32 < b < 127 for b in text):
        return None
    return text.decode("ascii")


def _owner(demangled: str, member: str) -> str | None:
    """`xla::Foo<a::b>::RunImpl(xla::HloModule*, ...)` -> `xla::Foo<a::b>` (None for other shapes)."""
    head = demangled.split("(", 1)[0]
    if not head.endswith("::" + member) or " " in head.replace(", ", ",").replace("(anonymous namespace)", ""):
        return None
    return head[: -len(member) - 2]


def _bases(image: ElfImage, typeinfos: dict[int, str]) -> dict[str, str]:
    """typeinfo symbol -> its (first) base's typeinfo symbol, from the relocated pointers."""
    parent = {}
    for address, name in typeinfos.items():
        kind = image.relocation_symbol(address) or ""
        slot = 24 if "__vmi_class_type_info" in kind else 16
        if "__class_type_info" in kind and "__si_" not in kind and "__vmi_" not in kind:
            continue  # no base
        base = image.pointer_at(address + slot)
        if base in typeinfos:
            parent[name] = typeinfos[base]
    return parent


def build_pass_map(path: Path) -> PassMap:
    """Read the pass classes of one shared object (about 1 s for jaxlib's 350 MB libjax_common.so)."""
    with ElfImage(path) as image:
        result = PassMap(str(path), image.machine, image.full_symtab)
        if not image.has_string(ROOT.encode()):
            result.note = "no xla::HloPassInterface typeinfo: no HLO passes in this file"
            return result
        symbols = image.select(prefixes=(b"_ZTI",), containing=(_NAME_SUFFIX + b"\0", *_ENTRY_PATTERNS))
        typeinfos = {s.address: s.name for s in symbols if s.name.startswith("_ZTI")}
        parent = _bases(image, typeinfos)
        passes = [ti for ti in typeinfos.values() if _reaches(ti, parent, ROOT)]
        names_and_entries = [s for s in symbols if not s.name.startswith(("_ZTI", "_ZZ"))]
        shown = demangle([s.name for s in names_and_entries] + passes)
        display = dict(zip([s.name for s in names_and_entries] + passes, shown))
        own_name, own_entry = {}, {}
        for symbol in names_and_entries:
            text = display[symbol.name]
            owner = _owner(text, "name") if text.endswith("::name() const") else None
            if owner:
                own_name[owner] = _literal(image, symbol)
            elif "(xla::HloModule*" in text:
                owner = _owner(text, "RunImpl") or _owner(text, "Run")
                if owner and owner not in own_entry:
                    own_entry[owner] = (symbol.name, text.split("(", 1)[0])
        if image.machine != "EM_X86_64":
            result.note = (
                f"pass names are read from x86-64 code only (this file is {image.machine}): use --break SYMBOL"
            )
    classes = {ti: display[ti].removeprefix("typeinfo for ") for ti in passes}
    result.classes = sorted(
        (_describe(ti, classes, parent, own_name, own_entry) for ti in passes), key=lambda c: (c.name or "~", c.cls)
    )
    return result


def _reaches(typeinfo: str, parent: dict[str, str], root: str) -> bool:
    seen = set()
    while typeinfo not in seen:
        if typeinfo == root:
            return True
        seen.add(typeinfo)
        typeinfo = parent.get(typeinfo, typeinfo)
    return False


def _describe(
    typeinfo: str,
    classes: dict[str, str],
    parent: dict[str, str],
    own_name: dict[str, str | None],
    own_entry: dict[str, tuple[str, str]],
) -> PassClass:
    name = name_from = entry = entry_from = None
    chain, current = [], typeinfo
    while current in classes and current not in chain:
        chain.append(current)
        current = parent.get(current, current)
    for ti in chain:
        cls = classes[ti]
        if name_from is None and cls in own_name:
            name, name_from = own_name[cls], cls
        if entry_from is None and cls in own_entry:
            entry, entry_from = own_entry[cls], cls
    return PassClass(
        classes[typeinfo], name, name_from, entry[0] if entry else None, entry[1] if entry else None, entry_from
    )
