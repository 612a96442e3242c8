"""What jax traced and compiled in a run, per jitted function, and what its persistent compilation cache did with
each compile (docs/cache.md).

The observer in the program's interpreter writes `function`, `trace` and `compile_end` events (run/probes/observer/);
run/compile_events.py reads them into one `CompileLog` per process (every trace, compile and cache-key part, for
`xlatools explain-cache`) and `FunctionSummary` rows, which the run manifest keeps (`metrics.functions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xlatools.records.base import OMIT_NONE

CacheState = Literal["hit", "miss", "off"]
# Scalars of jaxlib's CompileOptions as its Python binding shows them (parsed back from what jax hashed).
OptionValue = str | int | float | bool | None


@dataclass(kw_only=True)
class ArgPart:
    """One leaf of a traced call's arguments (`x`, `params['w']`), or one static argument, as jax saw it."""

    path: str
    shape: list[int] | None = None
    dtype: str | None = None
    weak_type: bool | None = None
    sharding: str | None = None  # of a jax Array (None: a host value, numpy or Python)
    static: str | None = field(default=None, metadata=OMIT_NONE)  # a static argument's repr
    static_type: str | None = field(default=None, metadata=OMIT_NONE)
    error: str | None = field(default=None, metadata=OMIT_NONE)  # its abstract value could not be read

    def describe(self) -> str:
        if self.static is not None:
            return f"{self.static} ({self.static_type})"
        weak = " (weak type)" if self.weak_type else ""
        return f"{self.dtype}{self.shape}{weak}"


@dataclass(kw_only=True)
class Trace:
    """One trace of a jitted function (jax's trace cache missed)."""

    number: int  # the process's trace number (1, 2, ...)
    seconds: float | None = None
    site: str | None = None  # file:line of the program's call
    function_object: int | None = None  # which function object of this code (1, 2, ...; jax caches per object)
    signature: list[ArgPart] = field(default_factory=list)


@dataclass(kw_only=True)
class KeyPart:
    """One part of jax's persistent-cache key, as jax hashed it (`computation`, `XLA flags`, ...)."""

    name: str
    sha256: str  # of the bytes jax fed into the key for this part
    values: list[str] | None = field(default=None, metadata=OMIT_NONE)  # those bytes as text (flags, versions)
    options: dict[str, OptionValue] | None = field(default=None, metadata=OMIT_NONE)  # compile options, readable
    wire: str | None = field(default=None, metadata=OMIT_NONE)  # compile options as hashed (base64 protobuf)


@dataclass(kw_only=True)
class CacheOutcome:
    """What jax's persistent compilation cache did with one compile."""

    state: CacheState  # hit: loaded; miss: looked up, absent; off: not looked up
    reason: str | None = None  # why not written / why off, as a code: min_compile_time, read_only, full, ...
    why: str | None = None  # the same in words
    written: bool | None = None  # a miss's entry is in the cache folder now (None: not known, or a hit)
    key: str | None = None
    directory: str | None = None
    min_compile_s: float | None = None  # jax_persistent_cache_min_compile_time_secs at that compile
    read_error: str | None = field(default=None, metadata=OMIT_NONE)  # jax could not read the entry
    parts: list[KeyPart] = field(default_factory=list)


@dataclass(kw_only=True)
class DeviceSet:
    """The devices one module was compiled for."""

    count: int = 0
    ids: list[int | None] = field(default_factory=list)  # the first 64
    kinds: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)  # their process indices


@dataclass(kw_only=True)
class Compile:
    """One compile of a function's module (a persistent-cache load counts: jax's compile call returned)."""

    module: int  # the observer's number of this compile in its process (ModuleMetrics.id)
    name: str
    trace: int | None = None  # the trace this compile followed (None: compiled without a new trace)
    call: int | None = field(default=None, metadata=OMIT_NONE)  # the jit call that compiled it (one call of a
    # jitted function under jax.grad compiles two modules: one call)
    under: list[str] | None = field(default=None, metadata=OMIT_NONE)  # tracer types among the call's arguments
    site: str | None = None  # file:line of the program's call
    seconds: float | None = None  # jax's whole compile call
    backend_seconds: float | None = None  # XLA's compiler (None: loaded from the cache)
    cache: CacheOutcome | None = None
    hlo: str | None = None  # the module's HLO text, relative to the bundle
    hlo_stage: str | None = None  # after_optimizations (as XLA compiled it)
    devices: DeviceSet | None = None
    process_id: int | None = None  # jax.distributed's process id (None: not distributed)
    error: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class FunctionLog:
    """Everything one process did with one jitted function (by its code's place)."""

    id: int  # the observer's number of this function in its process
    name: str
    qualname: str | None = None
    file: str | None = None
    line: int | None = None
    internal: bool = False  # jax's own (primitive dispatch: jit_convert_element_type, ...), not the program's
    pid: int | None = None
    process: int | None = None
    traces: list[Trace] = field(default_factory=list)
    compiles: list[Compile] = field(default_factory=list)

    @property
    def where(self) -> str | None:
        return f"{self.file}:{self.line}" if self.file else None

    def trace_of(self, compile_: Compile) -> Trace | None:
        return next((t for t in self.traces if t.number == compile_.trace), None)

    def calls(self) -> list[list[Compile]]:
        """The compiles grouped by the jit call that made them, in order (a compile with no call: its own group)."""
        groups: dict[object, list[Compile]] = {}
        for index, compiled in enumerate(self.compiles):
            groups.setdefault(compiled.call if compiled.call is not None else ("compile", index), []).append(compiled)
        return list(groups.values())

    def lost_seconds(self) -> float:
        """The seconds of every compile after the first call that compiled, and of the traces after the first."""
        lost = sum(c.seconds or 0.0 for group in self.calls()[1:] for c in group)
        lost += sum(t.seconds or 0.0 for t in self.traces[1:])
        return round(lost, 6)


@dataclass(kw_only=True)
class CompileLog:
    """One process's functions, and the compiles the observer could not tie to a jit call it saw."""

    pid: int
    process: int | None = None
    jax: str | None = None
    jaxlib: str | None = None
    functions: list[FunctionLog] = field(default_factory=list)
    unattributed: list[Compile] = field(default_factory=list)
    traced: bool = False  # traces were observed (this jax has the hook)


@dataclass(kw_only=True)
class FunctionSummary:
    """One row of `inspect`'s compile table (the run manifest's `metrics.functions`)."""

    name: str
    where: str | None = None  # file:line of its definition
    pid: int | None = None
    process: int | None = field(default=None, metadata=OMIT_NONE)
    internal: bool = False
    traces: int = 0
    compiles: int = 0
    signatures: int = 0  # distinct argument signatures traced
    hits: int = 0
    misses: int = 0
    not_cached: int = 0  # misses jax did not write, and compiles with the cache off
    compile_s: float = 0.0
    lost_s: float = 0.0  # compile (and trace) seconds after its first compile
    not_cached_why: list[str] = field(default_factory=list)  # distinct reasons, in words (the first 3)
