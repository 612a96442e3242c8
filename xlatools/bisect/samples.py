"""A metric's samples from one finished run: what a noise-aware test measures.

The program's own numbers come from the JSON object it writes to `$XLATOOLS_METRICS_FILE`
(`metrics.json` in its run bundle): NAME is a number, or a list of numbers (one per call, per
step, per repeat: several samples of the same quantity). A run's value is the best of its samples
(bisect/noise.best_of_run): per-call minima are what a loaded machine disturbs least.
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
