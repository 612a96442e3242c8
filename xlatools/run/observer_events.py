"""One process's event file of the observer (`<bundle>/observer/<pid>.events.jsonl`, docs/metrics.md) read
into typed records: the process, and each module it compiled or executed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from xlatools.records.metrics import (
    MAX_KEPT_SAMPLES,
    CallTimes,
    ModuleMemory,
    ModuleMetrics,
    ModuleRef,
    ObserverStatus,
    ProcessMetrics,
)

_MEMORY_KEYS = (
    ("temp", "temp_bytes"),
    ("argument", "argument_bytes"),
    ("output", "output_bytes"),
    ("alias", "alias_bytes"),
    ("code", "generated_code_bytes"),
    ("host_temp", "host_temp_bytes"),
)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Event:
    """One line: its kind and typed reads of its fields (a field of the wrong type reads as absent)."""

    __slots__ = ("kind", "_raw")

    def __init__(self, raw: object):
        """`raw`: one JSON line, as the target-side observer wrote it (an object with a string `ev`)."""
        self._raw = raw if isinstance(raw, dict) else {}
        self.kind = str(self._raw.get("ev", ""))

    def number(self, key: str) -> float | None:
        return _number(self._raw.get(key))

    def integer(self, key: str) -> int | None:
        return _integer(self._raw.get(key))

    def text(self, key: str) -> str | None:
        value = self._raw.get(key)
        return value if isinstance(value, str) and value else None

    def flag(self, key: str) -> bool | None:
        value = self._raw.get(key)
        return value if isinstance(value, bool) else None

    def numbers(self, key: str) -> list[float]:
        values = self._raw.get(key)
        return [v for v in map(_number, values) if v is not None] if isinstance(values, list) else []

    def integers(self, key: str) -> dict[str, int]:
        """A JSON object of whole numbers (memory bytes, untimed counts), other entries left out."""
        values = self._raw.get(key)
        if not isinstance(values, dict):
            return {}
        return {str(k): v for k, v in values.items() if _integer(v) is not None}

    def has(self, key: str) -> bool:
        return key in self._raw

    def objects(self, key: str) -> list[Event]:
        """A JSON list of objects, each read the same way (other entries left out)."""
        values = self._raw.get(key)
        return [Event({**v, "ev": ""}) for v in values if isinstance(v, dict)] if isinstance(values, list) else []

    def texts(self, key: str) -> list[str] | None:
        """A JSON list of strings (None when absent or not a list)."""
        values = self._raw.get(key)
        return [v for v in values if isinstance(v, str)] if isinstance(values, list) else None

    def whole_numbers(self, key: str) -> list[int | None]:
        """A JSON list of whole numbers or nulls (a shape, device ids)."""
        values = self._raw.get(key)
        return [_integer(v) for v in values] if isinstance(values, list) else []

    def scalars(self, key: str) -> dict[str, str | int | float | bool | None] | None:
        """A JSON object of scalars (compile options), other entries left out; None when absent."""
        values = self._raw.get(key)
        if not isinstance(values, dict):
            return None
        return {str(k): v for k, v in values.items() if v is None or isinstance(v, (str, int, float, bool))}

    def part(self, key: str) -> Event:
        """A nested JSON object, read the same way (an empty one when absent)."""
        value = self._raw.get(key)
        return Event({"ev": "", **value} if isinstance(value, dict) else {})


def read_events(path: Path) -> list[Event]:
    events = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    raw = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a kill
                if isinstance(raw, dict) and isinstance(raw.get("ev"), str):
                    events.append(Event(raw))
    except OSError:
        return []
    return events


@dataclass
class ObservedProcess:
    record: ProcessMetrics
    modules: dict[int, ModuleMetrics] = field(default_factory=dict)
    started: bool = False


def read_process(path: Path, notes: list[str], events: list[Event] | None = None) -> ObservedProcess | None:
    """The process of one events file (None: not an observer's file, or it never started). `events`: already read."""
    try:
        pid = int(path.name.split(".", 1)[0])
    except ValueError:
        return None
    process = ObservedProcess(ProcessMetrics(pid=pid))
    untimed: dict[str, int] = {}
    for event in read_events(path) if events is None else events:
        if event.kind == "start":
            process.started = True
            process.record.process = event.integer("process")
        elif event.kind == "jax":
            process.record.jax, process.record.jaxlib = event.text("jax"), event.text("jaxlib")
        elif event.kind == "note" and event.text("text"):
            notes.append(f"metrics: {event.text('text')}")
        elif event.kind == "end":
            process.record.exited = True
            _usage(process.record, event)
        elif event.kind == "untimed":
            untimed = event.integers("counts")
        elif (module := _module(process, event)) is not None:
            if event.kind == "compile_end":
                _compiled(module, event)
                if not process.record.exited:
                    _usage(process.record, event)
            elif event.kind == "calls":
                _calls(module, event)
    for m, count in untimed.items():
        module = process.modules.get(int(m)) if m.isdigit() else None
        if module is not None:
            module.calls = module.calls or CallTimes()
            module.calls.untimed = count
    return process if process.started else None


def _module(process: ObservedProcess, event: Event) -> ModuleMetrics | None:
    m = event.integer("m")
    if m is None:
        return None
    if m not in process.modules:
        process.modules[m] = ModuleMetrics(
            id=m, name=event.text("name") or "?", pid=process.record.pid, process=process.record.process
        )
    return process.modules[m]


def _compiled(module: ModuleMetrics, event: Event) -> None:
    module.name = event.text("name") or module.name
    module.compile_s, module.backend_compile_s = event.number("s"), event.number("backend_s")
    module.cache_hit, module.platform, module.devices = (
        event.flag("cache_hit"),
        event.text("platform"),
        event.integer("devices"),
    )
    if event.has("memory"):
        memory = event.integers("memory")
        module.memory = ModuleMemory(**{key: memory.get(raw) for raw, key in _MEMORY_KEYS})
    module.flops, module.transcendentals = event.number("flops"), event.number("transcendentals")
    module.bytes_accessed = event.number("bytes_accessed")
    module.error = event.text("error")
    cache = event.part("cache").text("state")
    module.function, module.cache = event.integer("f"), cache
    if cache in ("hit", "miss"):  # what the lookup found (a module another process compiled is neither)
        module.cache_hit = cache == "hit"


def _calls(module: ModuleMetrics, event: Event) -> None:
    wall, cpu = event.numbers("wall"), event.numbers("cpu")
    calls = module.calls = module.calls or CallTimes()
    room = max(0, MAX_KEPT_SAMPLES - len(calls.wall_s))
    calls.wall_s += wall[:room]
    calls.cpu_s += cpu[:room]
    calls.timed += len(wall)


def _usage(record: ProcessMetrics, event: Event) -> None:
    """Peak RSS and CPU time: from `end`, or the last `compile_end` of a process that never reached it."""
    rss = event.number("maxrss_kb") if event.has("maxrss_kb") else event.number("rss_kb")
    user, system = event.number("utime"), event.number("stime")
    if rss is not None:
        record.peak_rss_mb = round(rss / 1024, 3)
    if user is not None and system is not None:
        record.user_s, record.system_s, record.cpu_s = user, system, round(user + system, 6)


def read_status(path: Path, tries: int = 3) -> ObserverStatus | None:
    """One process's `<pid>.status.json` (rewritten in place: a read that meets a write tries again), or None."""
    import time

    for attempt in range(tries):
        try:
            raw = json.loads(path.read_bytes())
        except OSError:
            return None
        except ValueError:
            time.sleep(0.01 * (attempt + 1))
            continue
        status = Event({"ev": "status", **raw} if isinstance(raw, dict) else {})
        pid = status.integer("pid")
        if pid is None:
            return None
        text = status.text("state")
        state: Literal["compiling", "executing", "python"] = (
            "compiling" if text == "compiling" else "executing" if text == "executing" else "python"
        )
        return ObserverStatus(
            pid=pid,
            process=status.integer("process"),
            t=status.number("t"),
            state=state,
            m=status.integer("m"),
            name=status.text("name"),
            since=status.number("since"),
            last_compiled=_ref(status.part("last_compiled")) if status.has("last_compiled") else None,
            last_executed=_ref(status.part("last_executed")) if status.has("last_executed") else None,
        )
    return None


def _ref(part: Event) -> ModuleRef | None:
    ref = ModuleRef(m=part.integer("m"), name=part.text("name"), t=part.number("t"))
    return ref if ref.m is not None or ref.name is not None else None
