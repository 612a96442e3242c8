"""Recompiles within a run, and run B's persistent-cache misses against run A (pure: records in, explanations
out; files through each run's `Side`)."""

from __future__ import annotations

import os

from xlatools.cache_explain.parts import Seen, Side, key_causes, program_causes, same_key_causes, signature_of
from xlatools.cache_explain.signature import signature_causes
from xlatools.records.cache_report import Cause, Explanation
from xlatools.records.compiles import Compile, FunctionLog

_BIG = 1 << 20


def _explanation(kind: str, seen: Seen, against: Seen | None, causes: list[Cause], known: bool = True) -> Explanation:
    function = seen.function
    return Explanation(
        kind=kind,  # type: ignore[arg-type]  # "recompile" or "miss", from this module
        function=function.name if function else seen.compile.name,
        where=function.where if function else None,
        process=seen.log.process,
        module=seen.compile.module,
        compared_with=against.compile.module if against else None,
        site=seen.compile.site,
        seconds=seen.compile.seconds,
        cache=seen.compile.cache.state if seen.compile.cache else None,
        causes=causes,
        known=known,
    )


def _difference_count(before, after) -> int:
    return len(signature_causes(before, after)) if before is not None and after is not None else _BIG


# ---- within one run ------------------------------------------------------------------------------------------


def explain_recompiles(side: Side) -> list[Explanation]:
    """Each compile of a program's function after its first in the same process, against the earlier compile
    whose argument signature is closest (the latest of equals)."""
    found = []
    for log in side.logs:
        for function in (f for f in log.functions if not f.internal):
            firsts = [group[0] for group in function.calls()]  # more modules of one call are not recompiles
            for index, compiled in enumerate(firsts[1:], 1):
                seen = Seen(log, function, compiled)
                earlier = [Seen(log, function, c) for c in firsts[:index]]
                after = signature_of(seen)
                against = min(reversed(earlier), key=lambda e: _difference_count(signature_of(e), after))
                explanation = _recompile(seen, against, side)
                explanation.causes += _persistent(seen, earlier, side)
                found.append(explanation)
    return found


def _persistent(seen: Seen, earlier: list[Seen], side: Side) -> list[Cause]:
    """A recompile that missed the persistent cache although an earlier compile of the run had the same key."""
    cache = seen.compile.cache
    if cache is None or cache.state != "miss" or not cache.key:
        return []
    same = [e.compile for e in earlier if e.compile.cache and e.compile.cache.key == cache.key]
    if not same or same[-1].cache is None:
        return []
    return same_key_causes(same[-1].cache, cache, side, f"the earlier compile #{same[-1].module}")


def _recompile(seen: Seen, against: Seen, side: Side) -> Explanation:
    function = seen.function
    assert function is not None
    trace, before = function.trace_of(seen.compile), function.trace_of(against.compile)
    under = seen.compile.under and Cause(
        part="transformation",
        detail=f"called under a transformation ({', '.join(seen.compile.under)}): jax compiled the transformed program",
    )
    if trace is None and under:
        return _explanation("recompile", seen, against, [under])
    if trace is None:
        cause = Cause(
            part="no new trace",
            detail="compiled again without a new trace: jax no longer held the compiled executable (jax.clear_caches, "
            "or its executable cache let it go)",
        )
        return _explanation("recompile", seen, against, [cause])
    causes = signature_causes(before.signature, trace.signature) if before else []
    if not causes and before and trace.function_object != before.function_object:
        causes.append(
            Cause(
                part="function object",
                detail="a new function object with the same code: jax keeps its trace cache per function object "
                "(a lambda, partial or jax.jit made again at each call)",
                before=f"object {before.function_object}",
                after=f"object {trace.function_object}",
            )
        )
    causes = causes or ([under] if under else []) or program_causes(against, seen, side, side)
    if causes:
        return _explanation("recompile", seen, against, causes)
    cause = Cause(
        part="jax caches",
        detail="traced again with the same function object, argument signature and program: jax's trace cache no "
        "longer held it (jax.clear_caches, or an evicted entry)",
    )
    return _explanation("recompile", seen, against, [cause], known=False)


# ---- run B against run A -------------------------------------------------------------------------------------


def _identity(function: FunctionLog | None, compiled: Compile) -> tuple:
    if function is None:
        return ("module", compiled.name)
    return (function.qualname or function.name, os.path.basename(function.file or ""), function.line)


def _index(side: Side) -> dict[tuple, list[Seen]]:
    index: dict[tuple, list[Seen]] = {}
    for log in side.logs:
        for function in log.functions:
            for compiled in function.compiles:
                index.setdefault(_identity(function, compiled), []).append(Seen(log, function, compiled))
        for compiled in log.unattributed:
            index.setdefault(_identity(None, compiled), []).append(Seen(log, None, compiled))
    return index


def explain_misses(a: Side, b: Side) -> tuple[list[Explanation], list[str]]:
    """Each compile of run B that missed the cache, against run A's closest compile of the same function."""
    index, found, new, internal = _index(a), [], 0, 0
    for log in b.logs:
        seen = [Seen(log, f, c) for f in log.functions for c in f.compiles]
        seen += [Seen(log, None, c) for c in log.unattributed]
        for miss in (s for s in seen if s.compile.cache and s.compile.cache.state == "miss"):
            if miss.function is not None and miss.function.internal:
                internal += 1
                continue
            candidates = index.get(_identity(miss.function, miss.compile))
            if not candidates:
                new += 1
                continue
            against = min(candidates, key=lambda c: _closeness(c, miss))
            found.append(_miss(miss, against, a, b))
    notes = [f"{new} miss(es) in run B of functions run A never compiled"] * bool(new)
    notes += [f"{internal} miss(es) in run B of jax's own helpers (primitive dispatch), not explained"] * bool(internal)
    return found, notes


def _closeness(candidate: Seen, miss: Seen) -> tuple:
    ka, kb = candidate.compile.cache, miss.compile.cache
    same_key = ka is not None and kb is not None and ka.key == kb.key and ka.key is not None
    parts = {p.name: p.sha256 for p in ka.parts} if ka else {}
    differing = sum(parts.get(p.name) != p.sha256 for p in kb.parts) if kb else 0
    return (
        not same_key,
        candidate.process != miss.process,
        differing,
        _difference_count(signature_of(candidate), signature_of(miss)),
        not (ka and (ka.written or ka.state == "hit")),
    )


def _miss(miss: Seen, against: Seen, a: Side, b: Side) -> Explanation:
    ka, kb = against.compile.cache, miss.compile.cache
    assert kb is not None
    if ka is None:
        cause = Cause(part="not observed", detail="run A's compile has no record of the cache")
        return _explanation("miss", miss, against, [cause], known=False)
    if ka.key is not None and ka.key == kb.key:
        causes = same_key_causes(ka, kb, a)
    else:
        causes = key_causes(against, miss, a, b)
        if ka.directory != kb.directory:
            causes.append(
                Cause(
                    part="cache directory",
                    detail=f"cache folder: {ka.directory} -> {kb.directory}",
                    before=ka.directory,
                    after=kb.directory,
                )
            )
    if against.process != miss.process:
        causes.append(
            Cause(
                part="process index",
                detail=f"process index {against.process} -> {miss.process}",
                before=str(against.process),
                after=str(miss.process),
            )
        )
    return _explanation("miss", miss, against, causes, known=bool(causes))
