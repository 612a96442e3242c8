"""Metrics of a run by name: xlatools' built-in ones (measured by the observer, run/observer.py) and the
program's own ($XLATOOLS_METRICS_FILE, the bundle's metrics.json).

`metric_samples(run, "run_s:jit_step")` is the one way every command that takes `--metric` reads a run:
it returns every sample, how each group (a module, a process) reduces and how the groups combine, so a
threshold reads `value` and a noise-aware judgement reads the samples. docs/metrics.md says why each
metric sums or takes what it does.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xlatools.errors import UsageError
from xlatools.records.metrics import MetricSamples, ModuleMetrics, ProcessMetrics, RunMetrics, SampleGroup
from xlatools.records.run import RunManifest

PROGRAM_METRICS_FILE = "metrics.json"  # the program's own, at $XLATOOLS_METRICS_FILE


@dataclass(frozen=True)
class Builtin:
    name: str
    unit: str
    per_group: Literal["median", "sum", "max", "value"]
    combine: Literal["sum", "max", "value"]
    scope: Literal["module", "process"]
    what: str  # what one sample is, in words


BUILTINS = {
    b.name: b
    for b in (
        Builtin("compile_s", "s", "value", "sum", "module", "seconds of jax's compile call of a module"),
        Builtin("run_s", "s", "median", "sum", "module", "wall seconds of one synchronised call"),
        Builtin("run_cpu_s", "s", "median", "sum", "module", "CPU seconds (every thread) of one synchronised call"),
        Builtin("temp_bytes", "bytes", "value", "max", "module", "memory_analysis() temp bytes of a module"),
        Builtin("argument_bytes", "bytes", "value", "max", "module", "memory_analysis() argument bytes of a module"),
        Builtin("output_bytes", "bytes", "value", "max", "module", "memory_analysis() output bytes of a module"),
        Builtin("code_bytes", "bytes", "value", "sum", "module", "generated code bytes of a module"),
        Builtin("flops", "flops", "value", "sum", "module", "cost_analysis() flops of one call of a module"),
        Builtin("peak_rss_mb", "MiB", "value", "max", "process", "peak resident memory of a process"),
        Builtin("cpu_s", "s", "value", "sum", "process", "user + system CPU seconds of a process"),
    )
}
_MEMORY_FIELD = {
    "temp_bytes": "temp_bytes",
    "argument_bytes": "argument_bytes",
    "output_bytes": "output_bytes",
    "code_bytes": "generated_code_bytes",
}


def parse_metric(metric: str) -> tuple[str, str | None]:
    """`run_s:jit_step` -> ("run_s", "jit_step"); a module selection only on a built-in module metric."""
    name, sep, module = metric.partition(":")
    name, module = name.strip(), module.strip()
    if not name:
        raise UsageError(f"--metric {metric!r}: no metric name", hint="e.g. --metric run_s or --metric run_s:jit_step")
    if not sep:
        return name, None
    builtin = BUILTINS.get(name)
    if builtin is None:
        raise UsageError(
            f"--metric {metric!r}: only xlatools' own metrics take a module ({', '.join(module_metrics())})",
            hint="a metric the program writes is named as it writes it, without ':'",
        )
    if builtin.scope != "module":
        raise UsageError(f"--metric {metric!r}: {name} is measured per process, not per module", hint=f"use {name}")
    if not module:
        raise UsageError(f"--metric {metric!r}: no module after ':'", hint=f"e.g. --metric {name}:jit_step")
    return name, module


def module_metrics() -> list[str]:
    return [b.name for b in BUILTINS.values() if b.scope == "module"]


def metric_samples(run: Path | RunManifest, metric: str, bundle: Path | None = None) -> MetricSamples:
    """The samples of `metric` in a run: a bundle folder (read through the one reader), or its manifest record
    (`bundle`: its folder, where the program's own metrics file is). Never raises for a metric that was not
    measured: the result's `value` is None and `missing` says why."""
    name, module = parse_metric(metric)
    if isinstance(run, RunManifest):
        record = run
    else:
        from xlatools.records import read_bundle
        from xlatools.records.run import RUN_KINDS

        bundle = Path(run)
        record = read_bundle(bundle, kinds=RUN_KINDS)  # type: ignore[assignment]
    builtin = BUILTINS.get(name)
    if builtin is None:
        return _program_metric(metric, bundle)
    result = MetricSamples(
        metric=metric,
        name=name,
        module=module,
        unit=builtin.unit,
        per_group=builtin.per_group,
        combine=builtin.combine,
    )
    measured = record.metrics
    if measured is None:
        result.missing = "the run has no metrics (run with --no-metrics, not a jax program, or an older xlatools)"
        return result
    if builtin.scope == "process":
        result.groups = _process_groups(builtin, measured.processes)
    else:
        result.groups = _module_groups(builtin, _chosen(measured, module))
    return _combine(result, builtin, measured)


def _chosen(measured: RunMetrics, module: str | None) -> list[ModuleMetrics]:
    if module is None:
        return list(measured.modules)
    return [m for m in measured.modules if m.name in (module, f"jit_{module}")]


def _module_groups(builtin: Builtin, modules: list[ModuleMetrics]) -> list[SampleGroup]:
    groups = []
    for m in modules:
        group = SampleGroup(label=m.label(), module=m.name, module_id=m.id, process=m.process)
        if builtin.name in ("run_s", "run_cpu_s"):
            if m.calls is None:
                continue
            times = m.calls.wall_s if builtin.name == "run_s" else m.calls.cpu_s
            warm = min(m.calls.warmup, len(times))
            # A module that ran only its warm-up call(s): those count (a program that calls it once).
            group.samples, group.excluded = (times[warm:], times[:warm]) if len(times) > warm else (list(times), [])
        else:
            value = _module_value(builtin.name, m)
            if value is None:
                continue
            group.samples = [value]
        if group.samples:
            group.value = _reduce(builtin.per_group, group.samples)
            groups.append(group)
    return groups


def _module_value(name: str, m: ModuleMetrics) -> float | None:
    if name == "compile_s":
        return m.compile_s
    if name == "flops":
        return m.flops
    if m.memory is None:
        return None
    value = getattr(m.memory, _MEMORY_FIELD[name])
    return None if value is None else float(value)


def _process_groups(builtin: Builtin, processes: list[ProcessMetrics]) -> list[SampleGroup]:
    groups = []
    for p in processes:
        value = p.peak_rss_mb if builtin.name == "peak_rss_mb" else p.cpu_s
        if value is not None:
            label = f"process {p.process}" if p.process is not None else f"pid {p.pid}"
            groups.append(SampleGroup(label=label, process=p.process, samples=[value], value=value))
    return groups


def _reduce(how: str, values: list[float]) -> float:
    if how == "median":
        return float(statistics.median(values))
    if how == "max":
        return max(values)
    if how == "sum":
        return float(sum(values))
    return values[0]


def _combine(result: MetricSamples, builtin: Builtin, measured: RunMetrics) -> MetricSamples:
    values = [g.value for g in result.groups if g.value is not None]
    count = len(values)
    scope = f"{builtin.scope}{'' if count == 1 else 'es' if builtin.scope == 'process' else 's'}"
    scope = f"{count} {scope}" + (f" named {result.module}" if result.module else "")
    if not values:
        result.missing = _why_missing(builtin, result.module, measured)
        result.how = f"{builtin.what}: none measured"
        return result
    result.value = max(values) if builtin.combine == "max" else float(sum(values))
    per = {"median": "the median of its samples", "value": "its value", "max": "its largest", "sum": "their sum"}
    warm = sum(len(g.excluded) for g in result.groups)
    result.how = (
        f"{builtin.what}; per {builtin.scope}: {per[builtin.per_group]}; "
        f"{'the largest' if builtin.combine == 'max' else 'the sum'} over {scope}"
        f" ({len(result.samples())} samples{f', {warm} warm-up calls left out' if warm else ''})"
    )
    return result


def _why_missing(builtin: Builtin, module: str | None, measured: RunMetrics) -> str:
    if builtin.scope == "process":
        return "no process reported it (the observer did not run, or the process ended before writing anything)"
    if module is not None and not _chosen(measured, module):
        names = sorted({m.name for m in measured.modules})
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        return f"no module named {module} (the run compiled: {shown or 'none'})"
    if builtin.name in ("run_s", "run_cpu_s"):
        if measured.measure_calls == 0:
            return "calls were not timed in this run (--measure-calls 0)"
        return "no timed call of the module(s): not executed while observed"
    return f"the backend did not report it for the module(s) ({builtin.what})"


def _program_metric(metric: str, bundle: Path | None) -> MetricSamples:
    """The program's own metric, from the JSON object it wrote to $XLATOOLS_METRICS_FILE."""
    import json

    result = MetricSamples(metric=metric, name=metric, source="program")
    if bundle is None:
        result.missing = f"{metric} is not one of xlatools' metrics and no bundle was given to read metrics.json from"
        return result
    path = Path(bundle) / PROGRAM_METRICS_FILE
    try:
        value = float(json.loads(path.read_text())[metric])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        result.missing = f"no metric {metric} in the program's {PROGRAM_METRICS_FILE} ({type(exc).__name__})"
        return result
    result.groups = [SampleGroup(label=PROGRAM_METRICS_FILE, samples=[value], value=value)]
    result.value = value
    result.how = f"the value the program wrote to $XLATOOLS_METRICS_FILE ({PROGRAM_METRICS_FILE})"
    return result
