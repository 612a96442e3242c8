"""What xlatools measured of a run (`RunManifest.metrics`) and the samples of one metric (`MetricSamples`).

The observer in the program's interpreter (run/probes/observer/sitecustomize.py) writes events; run/observer.py
reads them into `RunMetrics` when the run ends; run/metrics.py turns a run and a metric name into
`MetricSamples`: the values a judgement reads, with what each group reduces to and how the groups combine.
docs/metrics.md says what every field and metric means.

Plain numbers in seconds and bytes, one record per compiled module, so that two runs diff field by field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xlatools.records.base import OMIT_NONE
from xlatools.records.compiles import FunctionSummary

DEFAULT_MEASURE_CALLS = 20  # the first N calls of each executable are synchronised and timed
ALL_CALLS = -1  # every call (jax's fast path off)
MAX_KEPT_SAMPLES = 1000  # per module in the manifest; the observer's files keep every one


@dataclass(kw_only=True)
class ModuleMemory:
    """`compiled.memory_analysis()` of one module, in bytes, as XLA reports it (exact: no execution needed)."""

    temp_bytes: int | None = None
    argument_bytes: int | None = None
    output_bytes: int | None = None
    alias_bytes: int | None = None
    generated_code_bytes: int | None = None
    host_temp_bytes: int | None = field(default=None, metadata=OMIT_NONE)  # memory-kind host buffers, where used


@dataclass(kw_only=True)
class CallTimes:
    """The timed calls of one executable, in call order: each call synchronised (its outputs ready) and timed
    from the executable's dispatch to its outputs being ready. The first `warmup` are warm-up calls (one-time
    costs: allocation, the first run of new code), left out of `run_s`."""

    wall_s: list[float] = field(default_factory=list)  # wall-clock seconds per timed call
    cpu_s: list[float] = field(default_factory=list)  # CPU seconds of the whole process (every thread) per call
    warmup: int = 1
    timed: int = 0  # every timed call; more than len(wall_s) when the manifest kept only MAX_KEPT_SAMPLES
    untimed: int = 0  # calls the observer saw past its budget (calls on jax's fast path are not seen at all)


@dataclass(kw_only=True)
class ModuleMetrics:
    """One compiled executable of one process: its compile, its size and cost, its timed calls."""

    id: int  # the observer's number of this compilation in its process (1, 2, ... in compile order)
    name: str  # the HLO module name (`jit_step`), as the dump names it
    pid: int | None = None
    process: int | None = field(default=None, metadata=OMIT_NONE)  # of a multi-process run (JAX_PROCESS_ID)
    dump_id: int | None = field(default=None, metadata=OMIT_NONE)  # the dump's module_NNNN, when it dumped
    platform: str | None = None
    devices: int | None = None
    compile_s: float | None = None  # jax's whole compile call: XLA's compile, or a persistent-cache load
    backend_compile_s: float | None = None  # the part in XLA's compiler (None: loaded from the persistent cache)
    cache_hit: bool | None = None  # from jax's persistent compilation cache (None: not known)
    memory: ModuleMemory | None = None
    flops: float | None = None  # cost_analysis(), where the backend gives it
    transcendentals: float | None = None
    bytes_accessed: float | None = None
    calls: CallTimes | None = None  # None: never executed while observed
    error: str | None = field(default=None, metadata=OMIT_NONE)  # the compile raised this
    function: int | None = field(default=None, metadata=OMIT_NONE)  # the jitted function (FunctionLog.id)
    cache: str | None = field(default=None, metadata=OMIT_NONE)  # hit, miss, off (CacheOutcome.state)

    def label(self) -> str:
        where = f" (process {self.process})" if self.process is not None else ""
        return f"#{self.id} {self.name}{where}"


@dataclass(kw_only=True)
class ProcessMetrics:
    """One process of the program (a multi-process run has several)."""

    pid: int
    process: int | None = field(default=None, metadata=OMIT_NONE)
    peak_rss_mb: float | None = None  # getrusage's ru_maxrss, in MiB
    cpu_s: float | None = None  # user + system CPU seconds of the process (every thread)
    user_s: float | None = None
    system_s: float | None = None
    exited: bool = False  # it reached Python's normal exit (False: killed, crashed or os._exit: last sample kept)
    jax: str | None = None
    jaxlib: str | None = None


@dataclass(kw_only=True)
class RunMetrics:
    """Everything the observer measured in a run (the manifest's `metrics`)."""

    folder: str = "observer"  # the observer's event files, relative to the bundle
    measure_calls: int = DEFAULT_MEASURE_CALLS  # calls timed per executable; ALL_CALLS: every call
    synchronised: bool = True  # the timed calls were synchronised (they waited for their outputs)
    mode: str = ""  # in words, for people: which calls were synchronised and timed
    processes: list[ProcessMetrics] = field(default_factory=list)
    modules: list[ModuleMetrics] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be observed, and why
    # Per jitted function: traces, compiles, persistent-cache outcomes (records/compiles.py, docs/cache.md),
    # worst first; and how many compiles were of a function of the program compiled before in its process (None:
    # traces were not observed).
    functions: list[FunctionSummary] = field(default_factory=list)
    recompiles: int | None = field(default=None, metadata=OMIT_NONE)


@dataclass(kw_only=True)
class SampleGroup:
    """The samples of one module (or one process) and the value they reduce to."""

    label: str  # `#3 jit_step`, `process 0`, `metrics.json`
    module: str | None = None  # the module name, for module metrics
    module_id: int | None = None
    process: int | None = None
    samples: list[float] = field(default_factory=list)
    excluded: list[float] = field(default_factory=list)  # warm-up calls: measured, not counted
    value: float | None = None  # the samples reduced (MetricSamples.per_group)


@dataclass(kw_only=True)
class MetricSamples:
    """A metric of one run: every sample, how each group reduces and how the groups combine into `value`.

    A noise-aware judgement reads `groups` (e.g. each group's minimum); a threshold reads `value`."""

    metric: str  # as asked: `run_s`, `run_s:jit_step`, or the program's own name
    name: str  # the metric without the module selection
    module: str | None = None  # the module selection (`jit_step`), None: every module
    source: Literal["xlatools", "program"] = "xlatools"  # measured by xlatools, or the program's metrics file
    unit: str = ""  # s, bytes, MiB, flops, or "" for a program's own
    per_group: Literal["median", "sum", "max", "value"] = "value"
    combine: Literal["sum", "max", "value"] = "value"
    groups: list[SampleGroup] = field(default_factory=list)
    value: float | None = None  # None: nothing measured (`missing` says why)
    how: str = ""  # in words: what was summed or taken, over what
    missing: str | None = field(default=None, metadata=OMIT_NONE)
    lower_is_better: bool = True

    def samples(self) -> list[float]:
        """Every counted sample of every group, in order (warm-up calls left out)."""
        return [s for group in self.groups for s in group.samples]


@dataclass(kw_only=True)
class ModuleRef:
    """A module a process compiled or executed, and when (Unix time)."""

    m: int | None = None  # the observer's compilation number in that process
    name: str | None = None
    t: float | None = None


@dataclass(kw_only=True)
class ObserverStatus:
    """Where one observed process is: its `<pid>.status.json`, readable while it runs (a stuck process too)."""

    pid: int
    process: int | None = None
    t: float | None = None  # when the observer last wrote it
    state: Literal["compiling", "executing", "python"] = "python"
    m: int | None = None  # the module compiling or executing (or the last one)
    name: str | None = None
    since: float | None = None  # when `state` began
    last_compiled: ModuleRef | None = None
    last_executed: ModuleRef | None = None  # the last call the observer saw (fast-path calls are not seen)
