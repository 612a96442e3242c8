"""One finished run's value of a metric, for the tests that judge by one (bisect/rule.py with --threshold,
bisect/metric_test.py without).

xlatools' own metrics come through run/metrics.metric_samples (the one reader of a run's measures); the
program's own from the JSON object it writes to `$XLATOOLS_METRICS_FILE` (`metrics.json` in its run
bundle): NAME is a number, or a list of numbers (one per call, per step, per repeat: several samples of
the same quantity). A run's value is then the best of its samples (bisect/noise.best_of_run): per-call
minima are what a loaded machine disturbs least.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

METRICS_FILE = "metrics.json"


class MetricMissing(Exception):
    """The run reported no usable value for the metric."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class RunSamples:
    name: str
    samples: tuple[float, ...]
    source: str  # where they came from, for messages: "metrics.json"


def _numbers(value: object) -> tuple[float, ...] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        values: tuple[float, ...] = (float(value),)
    elif (
        isinstance(value, list)
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        values = tuple(float(v) for v in value)
    else:
        return None
    return values if all(math.isfinite(v) for v in values) else None


def read_samples(bundle: Path, name: str) -> RunSamples:
    """The samples of `name` the run in `bundle` reported (MetricMissing says why there are none)."""
    path = Path(bundle) / METRICS_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise MetricMissing(f"the program wrote no {METRICS_FILE} ($XLATOOLS_METRICS_FILE)") from None
    except (OSError, ValueError) as exc:
        raise MetricMissing(f"{METRICS_FILE} cannot be read ({type(exc).__name__})") from None
    if not isinstance(data, dict) or name not in data:
        known = ", ".join(sorted(data)[:8]) if isinstance(data, dict) else "not a JSON object"
        raise MetricMissing(f"no metric {name} in {METRICS_FILE} (it has: {known or 'nothing'})")
    values = _numbers(data[name])
    if values is None:
        raise MetricMissing(f"{METRICS_FILE}: {name} is not a finite number or a list of them")
    return RunSamples(name, values, METRICS_FILE)


def threshold_value(manifest, bundle: Path, metric: str, lower_is_better: bool = True) -> float:
    """One run's value for --threshold: xlatools' own metric as run/metrics.py reduces and combines it (run_s:
    the sum of each module's median call), the program's own the best of its samples."""
    from xlatools.bisect.noise import best_of_run
    from xlatools.run.metrics import BUILTINS, metric_samples, parse_metric

    name, _ = parse_metric(metric)
    if name not in BUILTINS:
        return best_of_run(read_samples(Path(bundle), metric).samples, lower_is_better)
    found = metric_samples(manifest, metric, bundle=Path(bundle))
    if found.value is None:
        raise MetricMissing(found.missing or f"{metric} was not measured")
    return found.value


def run_value(manifest, bundle: Path, metric: str, lower_is_better: bool = True) -> tuple[float, str]:
    """One run's value of `metric` for a noise-aware test, and how it was taken: xlatools' per-call times
    (`run_s`, `run_cpu_s`) as each module's fastest timed call, combined over the modules called more than once
    (a module called once measures a first call's one-off cost), as the metric combines them; xlatools' other
    metrics their own value; the program's own the best of its samples. MetricMissing says why there is none."""
    from xlatools.bisect.noise import best_of_run
    from xlatools.run.metrics import BUILTINS, metric_samples, parse_metric

    name, _ = parse_metric(metric)
    if name not in BUILTINS:
        own = read_samples(Path(bundle), metric)
        how = "the best of its samples" if len(own.samples) > 1 else "its value"
        return best_of_run(own.samples, lower_is_better), f"the program's {METRICS_FILE}: {how}"
    found = metric_samples(manifest, metric, bundle=Path(bundle))
    if found.value is None:
        raise MetricMissing(found.missing or f"{metric} was not measured")
    if found.per_group != "median":
        return found.value, found.how
    timed = [g for g in found.groups if g.samples]
    repeated = [g for g in timed if len(g.samples) >= 2] or timed  # a module called once: a first call's one-off cost
    fastest = [best_of_run(g.samples, lower_is_better) for g in repeated]
    combined = sum(fastest) if found.combine == "sum" else max(fastest)
    left = f", {len(timed) - len(repeated)} module(s) called once left out" if len(repeated) < len(timed) else ""
    return combined, f"each module's fastest timed call, {found.combine} over {len(repeated)} module(s){left}"
