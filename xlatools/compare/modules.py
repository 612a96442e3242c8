"""Modules of one side, and matching them across two sides.

Module ids shift between runs and jaxlib versions (0.10.x numbers 0000, 0002, ...;
0.4.30 0000, 0001, ...) and one program may compile several modules of one name, so
modules are matched by name AND by the fingerprint of their before-optimisation HLO.
Raw hashes come first (one chunked read); canonical fingerprints are computed only where
they can change the answer, once per distinct file content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from xlatools.compare.model import MatchKind, ModuleRef
from xlatools.run.dump_stats import hlo_file_stats, memory_totals
from xlatools.run.dumps import DumpIndex, Module
from xlatools.run.hlo_canon import canonical_hlo, fingerprint

Pair = tuple[MatchKind, ModuleRef, ModuleRef]


def read_text(path: Path) -> str | None:
    """One module's text (never a whole dump); None when unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def canonical_file(path: Path) -> str | None:
    text = read_text(path)
    return None if text is None else canonical_hlo(text)


class Fingerprints:
    """Canonical fingerprints of files, cached by raw content digest: each distinct content is parsed once."""

    def __init__(self) -> None:
        self.by_digest: dict[str, str | None] = {}

    def of(self, path: Path, digest: str | None = None) -> str | None:
        if digest is None:
            stats = hlo_file_stats(path)
            digest = stats.digest if stats else None
        if digest is None:
            return None
        if digest not in self.by_digest:
            text = read_text(path)
            self.by_digest[digest] = None if text is None else fingerprint(text)
        return self.by_digest[digest]


def _digest(index: DumpIndex, name: str | None) -> str | None:
    stats = hlo_file_stats(index.root / name) if name else None
    return stats.digest if stats else None


def module_refs(index: DumpIndex | None) -> list[ModuleRef]:
    if index is None:
        return []
    refs = []
    for module_id in sorted(index.modules):
        m = index.modules[module_id]
        refs.append(
            ModuleRef(
                m.id,
                m.name,
                _digest(index, m.before_file),
                _digest(index, m.after_file),
                None,
                None,
                m.instructions_before,
                m.instructions_after,
                memory_totals(index, m),
                len(m.steps),
            )
        )
    return refs


def fill_fingerprints(
    refs: list[ModuleRef], index: DumpIndex, prints: Fingerprints, before: bool = True, after: bool = False
) -> None:
    for ref in refs:
        m: Module = index.modules[ref.id]
        if before and ref.fingerprint_before is None and m.before_file:
            ref.fingerprint_before = prints.of(index.root / m.before_file, ref.digest_before)
        if after and ref.fingerprint_after is None and m.after_file:
            ref.fingerprint_after = prints.of(index.root / m.after_file, ref.digest_after)


def _pair_by(
    kind: MatchKind,
    key: Callable[[ModuleRef], object],
    left_a: list[ModuleRef],
    left_b: list[ModuleRef],
    pairs: list[Pair],
) -> tuple[list[ModuleRef], list[ModuleRef]]:
    waiting: dict[object, list[ModuleRef]] = {}
    for ref in left_b:
        if (k := key(ref)) is not None:
            waiting.setdefault(k, []).append(ref)
    still_a, used = [], set()
    for ref in left_a:
        k = key(ref)
        candidates = waiting.get(k) if k is not None else None
        if candidates:
            other = candidates.pop(0)
            pairs.append((kind, ref, other))
            used.add(id(other))
        else:
            still_a.append(ref)
    return still_a, [r for r in left_b if id(r) not in used]


def match_modules(
    a: list[ModuleRef],
    b: list[ModuleRef],
    sides: tuple[DumpIndex, DumpIndex] | None = None,
    prints: Fingerprints | None = None,
) -> tuple[list[Pair], list[ModuleRef], list[ModuleRef]]:
    """Pairs (how matched, a, b) and the unmatched modules of each side, in id order.

    Rounds, each over what the previous left: same name and same input (raw bytes, then canonical
    fingerprint); same input under another name (a renamed jit); same name in order of id (the input
    changed). With `sides`, fingerprints are computed for the modules raw hashes leave undecided;
    without, the refs' fingerprint fields are used as they are."""
    pairs: list[Pair] = []
    left_a, left_b = _pair_by(
        "name+fingerprint", lambda m: (m.name, m.digest_before) if m.digest_before else None, list(a), list(b), pairs
    )
    if sides is not None:
        prints = prints or Fingerprints()
        fill_fingerprints(left_a, sides[0], prints)
        fill_fingerprints(left_b, sides[1], prints)
    left_a, left_b = _pair_by(
        "name+fingerprint",
        lambda m: (m.name, m.fingerprint_before) if m.fingerprint_before else None,
        left_a,
        left_b,
        pairs,
    )
    left_a, left_b = _pair_by("fingerprint", lambda m: m.fingerprint_before, left_a, left_b, pairs)
    left_a, left_b = _pair_by("name", lambda m: m.name, left_a, left_b, pairs)
    pairs.sort(key=lambda p: p[1].id)
    return pairs, left_a, left_b


def select_pairs(pairs: list[Pair], wanted: list[str]) -> list[Pair]:
    """Keep the pairs whose module (either side) has one of the wanted names or ids."""
    if not wanted:
        return pairs

    def hit(ref: ModuleRef, ref_text: str) -> bool:
        return ref.name == ref_text or (ref_text.isdigit() and int(ref_text) == ref.id)

    return [p for p in pairs if any(hit(p[1], w) or hit(p[2], w) for w in wanted)]
