"""The observer's `function`, `trace` and `compile_end` events (docs/cache.md) read into typed records: one
`CompileLog` per process (every trace, compile and persistent-cache key part) and the per-function rows that
the run manifest keeps (`metrics.functions`), worst first."""

from __future__ import annotations

from pathlib import Path

from xlatools.records.compiles import (
    ArgPart,
    CacheOutcome,
    Compile,
    CompileLog,
    DeviceSet,
    FunctionLog,
    FunctionSummary,
    KeyPart,
    Trace,
)
from xlatools.run.observer_events import Event, read_events

_STATES = ("hit", "miss", "off")


def read_compile_logs(bundle: Path, folder: str = "observer") -> list[CompileLog]:
    """Every observed process of a run, in process order."""
    logs = []
    for path in sorted((Path(bundle) / folder).glob("*.events.jsonl")):
        log = read_compile_log(path, folder)
        if log is not None:
            logs.append(log)
    return sorted(logs, key=lambda log: (log.process if log.process is not None else -1, log.pid))


def read_compile_log(path: Path, folder: str = "observer", events: list[Event] | None = None) -> CompileLog | None:
    """One process's events file (None: not an observer's file, or it never started). `events`: already read."""
    try:
        pid = int(path.name.split(".", 1)[0])
    except ValueError:
        return None
    log, started = CompileLog(pid=pid), False
    functions: dict[int, FunctionLog] = {}
    for event in read_events(path) if events is None else events:
        if event.kind == "start":
            started, log.process = True, event.integer("process")
        elif event.kind == "jax":
            log.jax, log.jaxlib = event.text("jax"), event.text("jaxlib")
            log.traced = "trace" in (event.texts("hooks") or [])
        elif event.kind == "function" and (f := event.integer("f")) is not None:
            functions[f] = FunctionLog(
                id=f,
                name=event.text("name") or "?",
                qualname=event.text("qualname"),
                file=event.text("file"),
                line=event.integer("line"),
                internal=bool(event.flag("internal")),
                pid=pid,
                process=log.process,
            )
        elif event.kind == "trace" and (function := functions.get(event.integer("f") or 0)) is not None:
            function.traces.append(_trace(event))
        elif event.kind == "compile_end" and event.integer("m") is not None:
            compiled = _compile(event, folder)
            owner = functions.get(event.integer("f") or 0)
            (owner.compiles if owner is not None else log.unattributed).append(compiled)
    log.functions = sorted(functions.values(), key=lambda f: f.id)
    return log if started else None


def _trace(event: Event) -> Trace:
    return Trace(
        number=event.integer("tr") or 0,
        seconds=event.number("s"),
        site=event.text("site"),
        function_object=event.integer("obj"),
        signature=[_arg(part) for part in event.objects("sig")],
    )


def _arg(part: Event) -> ArgPart:
    shape = part.whole_numbers("shape") if part.has("shape") else None
    return ArgPart(
        path=part.text("p") or "?",
        shape=[s for s in shape if s is not None] if shape is not None else None,
        dtype=part.text("dtype"),
        weak_type=part.flag("weak"),
        sharding=part.text("sharding"),
        static=part.text("static") if part.has("static") else None,
        static_type=part.text("type"),
        error=part.text("error"),
    )


def _compile(event: Event, folder: str) -> Compile:
    hlo = event.text("hlo")
    return Compile(
        module=event.integer("m") or 0,
        name=event.text("name") or "?",
        trace=event.integer("tr"),
        call=event.integer("call"),
        under=event.texts("under"),
        site=event.text("site"),
        seconds=event.number("s"),
        backend_seconds=event.number("backend_s"),
        cache=_cache(event.part("cache")) if event.has("cache") else None,
        hlo=f"{folder}/{hlo}" if hlo and ".." not in hlo else None,
        hlo_stage=event.text("hlo_stage"),
        devices=_devices(event.part("device_ids")) if event.has("device_ids") else None,
        process_id=event.integer("process_id"),
        error=event.text("error"),
    )


def _cache(part: Event) -> CacheOutcome | None:
    state = part.text("state")
    if state not in _STATES:
        return None
    return CacheOutcome(
        state=state,  # type: ignore[arg-type]  # checked against _STATES above
        reason=part.text("reason"),
        why=part.text("why"),
        written=part.flag("written"),
        key=part.text("key"),
        directory=part.text("dir"),
        min_compile_s=part.number("min_compile_s"),
        read_error=part.text("read_error"),
        parts=[
            KeyPart(
                name=p.text("name") or "?",
                sha256=p.text("sha256") or "",
                values=p.texts("values"),
                options=p.scalars("options"),
                wire=p.text("wire"),
            )
            for p in part.objects("parts")
        ],
    )


def _devices(part: Event) -> DeviceSet:
    return DeviceSet(
        count=part.integer("n") or 0,
        ids=part.whole_numbers("ids"),
        kinds=part.texts("kinds") or [],
        processes=[p for p in part.whole_numbers("processes") if p is not None],
    )


def summarise(logs: list[CompileLog]) -> tuple[list[FunctionSummary], int | None]:
    """One row per jitted function of each process (compiles tied to no jit call: one row per module name),
    worst first (compile seconds lost, then compile seconds); and the program's recompiles (None: not traced)."""
    rows = [_row(f) for log in logs for f in log.functions]
    for log in logs:
        by_name: dict[str, FunctionLog] = {}
        for compiled in log.unattributed:
            by_name.setdefault(
                compiled.name, FunctionLog(id=0, name=compiled.name, pid=log.pid, process=log.process)
            ).compiles.append(compiled)
        rows += [_row(f) for f in by_name.values()]
    rows.sort(key=lambda r: (-r.lost_s, -r.compile_s, r.name))
    traced = any(log.traced for log in logs)
    recompiles = sum(max(0, len(f.calls()) - 1) for log in logs for f in log.functions if not f.internal)
    return rows, recompiles if traced else None


def _row(function: FunctionLog) -> FunctionSummary:
    states = [c.cache.state if c.cache else None for c in function.compiles]
    whys = [c.cache.why for c in function.compiles if c.cache and c.cache.why and c.cache.written is not True]
    signatures = {tuple((a.path, a.describe(), a.sharding) for a in t.signature) for t in function.traces}
    return FunctionSummary(
        name=function.name,
        where=function.where,
        pid=function.pid,
        process=function.process,
        internal=function.internal,
        traces=len(function.traces),
        compiles=len(function.compiles),
        signatures=len(signatures),
        hits=states.count("hit"),
        misses=states.count("miss"),
        not_cached=sum(
            1 for c in function.compiles if c.cache and (c.cache.state == "off" or c.cache.written is False)
        ),
        compile_s=round(sum(c.seconds or 0.0 for c in function.compiles), 6),
        lost_s=function.lost_seconds(),
        not_cached_why=list(dict.fromkeys(whys))[:3],
    )
