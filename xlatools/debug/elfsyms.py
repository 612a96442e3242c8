"""Fast reads of a large shared object's own symbol table: which symbols, where, what the code
and data at an address hold, what a relocated pointer points to, and demangled names.

pyelftools finds the sections; the symbol table itself is scanned with struct (jaxlib's
libjax_common.so holds ~740k symbols: pyelftools' per-symbol objects take ~30 s, this ~0.5 s).
Only 64-bit little-endian objects (x86-64, aarch64) are read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import UsageError

_SYMBOL = struct.Struct("<IBBHQQ")  # st_name, st_info, st_other, st_shndx, st_value, st_size
_RELA = struct.Struct("<QQq")  # r_offset, r_info, r_addend
_RELATIVE = {"EM_X86_64": 8, "EM_AARCH64": 1027}


@dataclass(frozen=True)
class Symbol:
    name: str  # the mangled (linkage) name
    address: int  # st_value: the file's virtual address


class ElfImage:
    """One ELF file, opened for reading until close()."""

    def __init__(self, path: Path):
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        self.path = Path(path)
        try:
            self._file = open(self.path, "rb")
            self._elf = ELFFile(self._file)
        except (OSError, ELFError) as exc:
            raise UsageError(f"{self.path}: not a readable ELF file ({exc})") from None
        if self._elf.elfclass != 64 or not self._elf.little_endian:
            raise UsageError(f"{self.path}: only 64-bit little-endian ELF files are read")
        self.machine = self._elf["e_machine"]
        self._segments = [
            (s["p_vaddr"], s["p_offset"], s["p_filesz"]) for s in self._elf.iter_segments() if s["p_type"] == "PT_LOAD"
        ]
        table = self._elf.get_section_by_name(".symtab") or self._elf.get_section_by_name(".dynsym")
        self.full_symtab = table is not None and table.name == ".symtab"
        self._symbols = table.data() if table is not None else b""
        self._strings = self._elf.get_section(table["sh_link"]).data() if table is not None else b""
        self._relocations: dict[int, tuple[int, int, int]] | None = None

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ElfImage":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def has_string(self, text: bytes) -> bool:
        return text in self._strings

    def select(self, prefixes: tuple[bytes, ...] = (), containing: tuple[bytes, ...] = ()) -> list[Symbol]:
        """Defined symbols whose name starts with one of `prefixes` or contains one of `containing`.

        Names are found in the string table first; the linker may share a string's tail between
        names, so a name that contains a pattern is recognised by where it ends."""
        strings = self._strings
        starts = {i for p in prefixes for i in _occurrences(strings, p)}
        ends: dict[int, int] = {}  # end of a name (its NUL) -> where the pattern starts in it
        for pattern in containing:
            for at in _occurrences(strings, pattern):
                ends[strings.find(b"\0", at)] = at
        found = []
        find = strings.find
        for name, _info, _other, _shndx, value, _size in _SYMBOL.iter_unpack(self._symbols):
            if not value:
                continue
            if name in starts or (ends and ends.get(find(b"\0", name), -1) >= name):
                found.append(Symbol(strings[name : find(b"\0", name)].decode("ascii", "replace"), value))
        return found

    def read(self, address: int, size: int) -> bytes | None:
        """`size` bytes at a virtual address, as the file holds them (None outside the loaded segments)."""
        for vaddr, offset, filesz in self._segments:
            if vaddr <= address and address + size <= vaddr + filesz:
                self._file.seek(offset + address - vaddr)
                return self._file.read(size)
        return None

    def pointer_at(self, address: int) -> int | None:
        """The pointer stored at `address` once the loader has relocated it (file addresses)."""
        relocation = self._relocation_table().get(address)
        if relocation is not None:
            kind, symbol_index, addend = relocation
            if kind == _RELATIVE.get(self.machine):
                return addend
            target = self._dynamic_symbol_value(symbol_index)
            return target + addend if target else None
        stored = self.read(address, 8)  # RELR and REL keep the addend in place
        return struct.unpack("<Q", stored)[0] if stored else None

    def relocation_symbol(self, address: int) -> str | None:
        """The name of the symbol a relocation at `address` refers to (e.g. a typeinfo's vtable)."""
        relocation = self._relocation_table().get(address)
        if relocation is None or not relocation[1]:
            return None
        table = self._elf.get_section_by_name(".dynsym")
        return table.get_symbol(relocation[1]).name if table is not None else None

    def _dynamic_symbol_value(self, index: int) -> int:
        table = self._elf.get_section_by_name(".dynsym")
        return table.get_symbol(index)["st_value"] if table is not None and index else 0

    def _relocation_table(self) -> dict[int, tuple[int, int, int]]:
        if self._relocations is None:
            self._relocations = {}
            section = self._elf.get_section_by_name(".rela.dyn")
            if section is not None:
                for offset, info, addend in _RELA.iter_unpack(section.data()):
                    self._relocations[offset] = (info & 0xFFFFFFFF, info >> 32, addend)
        return self._relocations


def _occurrences(data: bytes, pattern: bytes):
    at = data.find(pattern)
    while at >= 0:
        yield at
        at = data.find(pattern, at + 1)


def demangle(names: list[str]) -> list[str]:
    """C++ names as people write them, through libstdc++'s own demangler (the one c++filt and gdb
    use); a name it cannot read stays as it is."""
    import ctypes
    import ctypes.util

    try:
        library = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
    except OSError:
        return list(names)
    cxa_demangle = library.__cxa_demangle
    cxa_demangle.restype = ctypes.c_void_p
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    out = []
    for name in names:
        status = ctypes.c_int()
        result = cxa_demangle(name.encode(), None, None, ctypes.byref(status))
        if status.value == 0 and result:
            out.append(ctypes.string_at(result).decode("utf-8", "replace"))
            free(result)
        else:
            out.append(name)
    return out
