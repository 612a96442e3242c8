"""The emitted code of two matched modules, compared file by file: LLVM IR (`.ll`; the CPU writes
`<kernel>.ir-no-opt.ll` / `.ir-with-opt.ll` with every text dump on jaxlib 0.10+), PTX, kernel MLIR,
Triton IR and GPU thunk sequences, wherever the dumps hold them (`--preset dump:llvm` adds the emitter's).

Files are paired by their name after the module's (`multiply_add_fusion.3_kernel_module.ir-with-opt.ll`).
A pair is `same` (equal bytes), `noise` (equal once codenorm's rules drop what differs between two
compiles of the same code), `same_shape` (the same instructions with other operands, names or order),
`differs`, or one-sided. Object code (`.o`) is left out: it follows its `.ll`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from xlatools.compare.codenorm import KIND_NAMES, MAX_NORMALISED_BYTES, dialect, normalise, numerics_flags, same_shape
from xlatools.compare.layers import CHANGED, CodeFile, CodeStatus, EmittedDiff
from xlatools.compare.textdiff import DEFAULT_LIMIT, text_diff
from xlatools.hlo.dump_names import DumpKind, parse_dump_name
from xlatools.run.dumps import DumpIndex, Module

MAX_LISTED = 200  # changed files listed per module
MAX_DIFFS = 3  # normalised text diffs kept per module (all with --full)


def emitted_files(module: Module) -> dict[str, tuple[DumpKind, str]]:
    """tail -> (kind, path in the dump) of a module's emitted code."""
    out = {}
    for rel in module.files:
        name = parse_dump_name(rel, module_name=module.name)
        if name is not None and name.kind in KIND_NAMES and "/" not in rel:
            out[name.tail] = (name.kind, rel)
    return out


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_NORMALISED_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _same_bytes(a: Path, b: Path) -> bool:
    from xlatools.fsutil import sha256_file

    try:
        return a.stat().st_size == b.stat().st_size and sha256_file(a) == sha256_file(b)
    except OSError:
        return False


def _compare(tail: str, dump_kind: DumpKind, paths: tuple[Path, Path], result: EmittedDiff, full: bool) -> CodeFile:
    kind = KIND_NAMES[dump_kind]
    text_a, text_b = (_read(p) for p in paths)
    rel_a, rel_b = (p.name for p in paths)
    if text_a is None or text_b is None:  # too large (or unreadable): bytes decide
        result.bytes_only += 1
        return CodeFile(tail, kind, "same" if _same_bytes(*paths) else "differs", rel_a, rel_b)
    if text_a == text_b:
        return CodeFile(tail, kind, "same", rel_a, rel_b)
    which = dialect(dump_kind, tail)
    norm_a, norm_b = normalise(text_a, which), normalise(text_b, which)
    rules = sorted(norm_a.applied | norm_b.applied)
    for flags, norm in ((result.flags_a, norm_a), (result.flags_b, norm_b)):
        for flag, count in numerics_flags(norm.text, which).items():
            flags[flag] = flags.get(flag, 0) + count
    if norm_a.text == norm_b.text:
        return CodeFile(tail, kind, "noise", rel_a, rel_b, rules)
    # A thunk sequence's numbers are its content (grids, threads, shared memory): never masked.
    masked = which != "thunks" and same_shape(norm_a.text, norm_b.text)
    status: CodeStatus = "same_shape" if masked else "differs"
    if status == "differs" and (full or len(result.diffs) < MAX_DIFFS):
        limit = DEFAULT_LIMIT // 2
        result.diffs.append(
            text_diff(f"{kind}: {tail} (normalised)", norm_a.text, norm_b.text, "A", "B", full=full, limit=limit)
        )
    return CodeFile(tail, kind, status, rel_a, rel_b, rules)


def diff_emitted(a: tuple[DumpIndex, Module], b: tuple[DumpIndex, Module], full: bool = False) -> EmittedDiff | None:
    """The emitted code of one matched module pair; None when neither side dumped any."""
    (index_a, module_a), (index_b, module_b) = a, b
    files_a, files_b = emitted_files(module_a), emitted_files(module_b)
    if not files_a and not files_b:
        return None
    result = EmittedDiff()
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for tail in sorted(set(files_a) | set(files_b)):
        dump_kind = (files_a.get(tail) or files_b[tail])[0]
        kind = KIND_NAMES[dump_kind]
        if tail not in files_b:
            entry = CodeFile(tail, kind, "only_a", files_a[tail][1], None)
        elif tail not in files_a:
            entry = CodeFile(tail, kind, "only_b", None, files_b[tail][1])
        else:
            paths = (index_a.root / files_a[tail][1], index_b.root / files_b[tail][1])
            entry = _compare(tail, dump_kind, paths, result, full)
        counts[entry.status] += 1
        kinds[kind] += 1
        rules.update(entry.normalised)
        if entry.status in CHANGED and len(result.changed) < MAX_LISTED:
            result.changed.append(entry)
    result.files, result.counts, result.kinds, result.normalised = (
        sum(counts.values()),
        dict(counts),
        dict(kinds),
        dict(rules),
    )
    return result
