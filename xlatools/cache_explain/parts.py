"""The parts of two compiles that differ (pure): jax's cache-key parts as jax hashed them, the argument
signature, the program's HLO, the cache folder, the process. Files (HLO texts, cache entries) come through the
`Side` of each run, which its caller makes."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass

from xlatools.cache_explain.hlo_diff import first_difference
from xlatools.cache_explain.signature import signature_causes
from xlatools.cache_explain.wire import differences
from xlatools.records.cache_report import Cause
from xlatools.records.compiles import CacheOutcome, Compile, CompileLog, DeviceSet, FunctionLog, KeyPart, OptionValue

# Why a miss was not written (CacheOutcome.reason) -> the part named
_NOT_WRITTEN = {
    "min_compile_time": "minimum compile time",
    "process_index": "process index",
    "host_callbacks": "host callbacks",
    "read_only": "read-only cache",
    "full": "full cache",
    "permission": "cache permissions",
    "not_serialisable": "not serialisable",
    "write_error": "write error",
    "not_stored": "not stored",
}
_OPTION_SHOWN = 6


@dataclass(frozen=True)
class Side:
    """One run: its processes' logs, its HLO texts, and whether a cache entry exists now."""

    name: str  # "A", "B"
    logs: list[CompileLog]
    hlo: Callable[[Compile], str | None]
    entry_exists: Callable[[str, str], bool | None] = lambda folder, key: None


@dataclass(frozen=True)
class Seen:
    """One compile with what it belongs to."""

    log: CompileLog
    function: FunctionLog | None
    compile: Compile

    @property
    def process(self) -> int | None:
        return self.log.process if self.log.process is not None else self.compile.process_id


def program_causes(a: Seen, b: Seen, side_a: Side, side_b: Side) -> list[Cause]:
    """The first instruction where the two programs differ (nothing when either HLO text was not recorded)."""
    before, after = side_a.hlo(a.compile), side_b.hlo(b.compile)
    if before is None or after is None:
        return []
    found = first_difference(before, after)
    if found is None:
        return []
    where = f" in {found.computation}" if found.computation else " in the module header"
    if found.constant:
        return [
            Cause(
                part="constant",
                detail=f"a constant baked into the program differs{where}: {found.before} -> {found.after} (a value "
                "the function computed when it was traced)",
                before=found.before,
                after=found.after,
            )
        ]
    return [
        Cause(
            part="program",
            detail=f"the program differs; first differing instruction of the optimised HLO{where}: "
            f"{found.before} -> {found.after}",
            before=found.before,
            after=found.after,
        )
    ]


def signature_of(seen: Seen):
    trace = seen.function.trace_of(seen.compile) if seen.function else None
    return trace.signature if trace else None


def same_key_causes(a: CacheOutcome, b: CacheOutcome, side_a: Side, who: str = "run A") -> list[Cause]:
    """`who` (run A, or an earlier compile of the run) compiled it with the very key `b` looked up: why `b` did
    not find it."""
    if a.state == "off":
        return [Cause(part="cache off", detail=f"{who} did not use the cache: {a.why}")]
    if a.state == "miss" and a.written is False:
        part = _NOT_WRITTEN.get(a.reason or "", "not written")
        return [Cause(part=part, detail=f"{who} compiled it with the same key and did not write it: {a.why}")]
    if a.directory != b.directory:
        return [
            Cause(
                part="cache directory",
                detail=f"the same key; {who}'s entry is in {a.directory}, this compile looked in {b.directory}",
                before=a.directory,
                after=b.directory,
            )
        ]
    exists = side_a.entry_exists(a.directory or "", a.key or "")
    done = "wrote" if a.state == "miss" else "found"
    if exists is False:
        return [Cause(part="entry gone", detail=f"{who} {done} it in the same folder; it is not there now")]
    read = f"; this compile could not read it: {b.read_error}" if b.read_error else ""
    there = "it is there now" if exists else "xlatools cannot tell whether it is there now"
    return [
        Cause(part="entry not found", detail=f"{who} {done} it under the same key in the same folder; {there}{read}")
    ]


def key_causes(a: Seen, b: Seen, side_a: Side, side_b: Side) -> list[Cause]:
    """The parts of jax's key that differ, jaxlib first (another jaxlib may change every other part by itself)."""
    ka, kb = a.compile.cache, b.compile.cache
    assert ka is not None and kb is not None
    left, right = {p.name: p for p in ka.parts}, {p.name: p for p in kb.parts}
    causes: list[Cause] = []
    for name in [*right, *(n for n in left if n not in right)]:
        x, y = left.get(name), right.get(name)
        if x is None or y is None:
            owner = side_b.name if x is None else side_a.name
            causes.append(Cause(part=name, detail=f"only run {owner}'s jax hashes {name} into its key", source="jax"))
        elif x.sha256 != y.sha256:
            causes += _part_causes(name, x, y, a, b, side_a, side_b)
    if not left or not right:
        causes.append(Cause(part="key", detail="the keys differ; jax's key parts were not recorded on both sides"))
    causes.sort(key=lambda c: c.part != "jaxlib version")
    return causes


def _part_causes(name: str, x: KeyPart, y: KeyPart, a: Seen, b: Seen, side_a: Side, side_b: Side) -> list[Cause]:
    if name == "computation":
        return _computation(a, b, side_a, side_b)
    if name == "XLA flags":
        return [_flags(x.values or [], y.values or [])]
    if name == "compile_options":
        return [_options(x, y)]
    if name == "accelerator_config":
        return [_devices(a.compile.devices, b.compile.devices, x, y)]
    before, after = " ".join(x.values or []), " ".join(y.values or [])
    if name == "jax_lib version":
        detail = f"jaxlib {before} -> {after} (with another jaxlib every other part may differ because of it)"
        return [Cause(part="jaxlib version", detail=detail, before=before, after=after, source="jax")]
    word = "backend version" if name == "backend version" else name
    return [Cause(part=word, detail=f"{word}: {before!r} -> {after!r}", before=before, after=after, source="jax")]


def _computation(a: Seen, b: Seen, side_a: Side, side_b: Side) -> list[Cause]:
    before, after = signature_of(a), signature_of(b)
    causes = signature_causes(before, after) if before is not None and after is not None else []
    causes += program_causes(a, b, side_a, side_b)
    if causes:
        return causes
    return [
        Cause(
            part="program",
            detail="the program differs (jax's hash of its computation); its HLO text was not recorded on both "
            "sides (a module loaded from the cache has none)",
            source="jax",
        )
    ]


def _flags(before: list[str], after: list[str]) -> Cause:
    added = [f for f in after if f not in before]
    removed = [f for f in before if f not in after]
    words = [f"added {' '.join(added)}"] * bool(added) + [f"removed {' '.join(removed)}"] * bool(removed)
    return Cause(
        part="XLA flags",
        detail=f"XLA flags in the key: {'; '.join(words) or 'the same flags in another order'}",
        before=" ".join(before),
        after=" ".join(after),
        source="jax",
    )


def _options(x: KeyPart, y: KeyPart) -> Cause:
    left, right = x.options or {}, y.options or {}
    # an option only one jaxlib's binding shows is not a difference it can tell
    changed = [k for k in sorted(set(left) & set(right)) if left[k] != right[k]]
    # jaxlib shows some options twice (`device_assignment` and `build.device_assignment`): once is enough
    changed = [k for k in changed if not (k.startswith("build.") and k[6:] in changed and _same(left, right, k))]
    shown = [f"{k}: {left.get(k)} -> {right.get(k)}" for k in changed[:_OPTION_SHOWN]]
    if not shown and x.wire and y.wire:
        found = differences(base64.b64decode(x.wire), base64.b64decode(y.wire), _OPTION_SHOWN)
        shown = [f"proto field {path}: {p} -> {q}" for path, p, q in found]
    more = f" (and {len(changed) - _OPTION_SHOWN} more)" if len(changed) > _OPTION_SHOWN else ""
    detail = "; ".join(shown) + more if shown else "they differ; xlatools could not read them"
    return Cause(part="compile options", detail=f"compile options: {detail}", source="jax")


def _short(part: KeyPart) -> str:
    """A part's values as jax hashed them; a long one (a serialised topology) by its hash."""
    text = " ".join(part.values or [])
    return text if len(text) <= 80 else f"{len(text) // 2} bytes, sha256 {part.sha256[:16]}"


def _same(left: dict[str, OptionValue], right: dict[str, OptionValue], key: str) -> bool:
    short = key.split(".", 1)[1]
    return (left.get(key), right.get(key)) == (left.get(short), right.get(short))


def _devices(a: DeviceSet | None, b: DeviceSet | None, x: KeyPart, y: KeyPart) -> Cause:
    def text(devices: DeviceSet | None, part: KeyPart) -> str:
        if devices is None:
            return _short(part)
        return f"{devices.count} x {'/'.join(devices.kinds)} ids {devices.ids} processes {devices.processes}"

    before, after = text(a, x), text(b, y)
    if before == after:  # the same devices: what differs is how jax described them
        before, after = _short(x), _short(y)
        detail = f"the device topology jax hashed differs ({before} -> {after}) for the same devices"
        return Cause(part="devices", detail=detail, before=before, after=after, source="jax")
    return Cause(part="devices", detail=f"devices: {before} -> {after}", before=before, after=after, source="jax")
