"""Modules of one side, and matching them across two sides.

Module ids shift between runs and jaxlib versions (0.10.x numbers 0000, 0002, ...;
0.4.30 0000, 0001, ...) and one program may compile several modules of one name, so
modules are matched by name AND by the fingerprint of their before-optimisation HLO.
"""

from __future__ import annotations

from pathlib import Path

from xlatools.compare.model import MatchKind, ModuleRef
from xlatools.run.dumps import DumpIndex, Module, memory_totals
from xlatools.run.hlo_canon import canonical_hlo, fingerprint


def read_text(path: Path) -> str | None:
    """One module's text (never a whole dump); None when unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def canonical_file(path: Path) -> str | None:
    text = read_text(path)
    return None if text is None else canonical_hlo(text)


def fingerprint_file(path: Path) -> str | None:
    text = read_text(path)
    return None if text is None else fingerprint(text)


def module_ref(index: DumpIndex, module: Module) -> ModuleRef:
    before = fingerprint_file(index.root / module.before_file) if module.before_file else None
    after = fingerprint_file(index.root / module.after_file) if module.after_file else None
    return ModuleRef(module.id, module.name, before, after, module.instructions_before,
                     module.instructions_after, memory_totals(index, module), len(module.steps))


def module_refs(index: DumpIndex | None) -> list[ModuleRef]:
    if index is None:
        return []
    return [module_ref(index, index.modules[i]) for i in sorted(index.modules)]


def match_modules(a: list[ModuleRef], b: list[ModuleRef]) -> tuple[list[tuple[MatchKind, ModuleRef, ModuleRef]], list[ModuleRef], list[ModuleRef]]:
    """Pairs (how matched, a, b) and the unmatched modules of each side, in id order.

    Rounds, each over what the previous left: same name and same input fingerprint; same
    input fingerprint under another name (a renamed jit); same name, in order of id (the input changed)."""
    left_a, left_b = list(a), list(b)
    pairs: list[tuple[MatchKind, ModuleRef, ModuleRef]] = []
    rounds: list[tuple[MatchKind, object]] = [
        ("name+fingerprint", lambda m: (m.name, m.fingerprint_before) if m.fingerprint_before else None),
        ("fingerprint", lambda m: m.fingerprint_before),
        ("name", lambda m: m.name),
    ]
    for kind, key in rounds:
        waiting: dict[object, list[ModuleRef]] = {}
        for ref in left_b:
            k = key(ref)
            if k is not None:
                waiting.setdefault(k, []).append(ref)
        still_a = []
        for ref in left_a:
            k = key(ref)
            candidates = waiting.get(k) if k is not None else None
            if candidates:
                other = candidates.pop(0)
                pairs.append((kind, ref, other))
                left_b.remove(other)
            else:
                still_a.append(ref)
        left_a = still_a
    pairs.sort(key=lambda p: p[1].id)
    return pairs, left_a, left_b


def select_pairs(pairs, wanted: list[str]):
    """Keep the pairs whose module (either side) has one of the wanted names or ids."""
    if not wanted:
        return pairs

    def hit(ref: ModuleRef, ref_text: str) -> bool:
        return ref.name == ref_text or (ref_text.isdigit() and int(ref_text) == ref.id)

    return [p for p in pairs if any(hit(p[1], w) or hit(p[2], w) for w in wanted)]
