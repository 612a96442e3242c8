"""Noise-aware judging of a metric against two anchors (pure: numbers in, verdicts out).

A bisection with `--metric NAME` and no `--threshold` measures its two ends first, several times and
interleaved (good, bad, bad, good, ...), so that a change of load during the measurements hits both.
Everything else is decided from those anchors:

- Scale: ratios (logarithms) when every anchor value is positive (times, bytes: a slowdown is a
  factor), else plain differences.
- A run's value: the best of the samples it reports (per-call times: the minimum, which a loaded
  machine disturbs least); across runs: the median (one outlier run moves it little).
- Noise of one run (sigma): the median absolute deviation of each end's runs (x 1.4826, the
  Gaussian equivalent), pooled over both ends; never below NOISE_FLOOR of the value unless every
  run of each end gave the identical value (exact metrics: memory_analysis bytes), where it is 0.
- The ends must differ beyond noise: the gap of their medians is at least Z_SEPARATE standard
  errors of that gap, and a random bad-end run is worse than a random good-end run in at least
  MIN_AUC of the pairs (a rank statistic: one wild run cannot fake or hide a difference). Ends in
  the wrong order (the bad end better) are refused too.
- A step's position: 0 = like the good end, 1 = like the bad end (its median between the anchors'
  medians). It is good when position + margin < 0.5, bad when position - margin > 0.5, where
  margin is Z_DECIDE standard errors of its median over its runs (its own spread when larger than
  the anchors'); else ambiguous, and the caller measures it again (up to a cap, then skip).

With one anchor only (the program as it is: `bisect flags`, `bisect passes` without a reference
interpreter) the good anchor is virtual: the bad one improved by VIRTUAL_GAIN. "Good" then means
"better than the program as it is by at least that much, beyond noise".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Literal, Sequence

Z_SEPARATE = 3.0  # standard errors between the anchors' medians
MIN_AUC = 0.9  # share of (good run, bad run) pairs where the bad run is worse
Z_DECIDE = 2.5  # standard errors between a step's median and the midpoint
NOISE_FLOOR = 0.005  # 0.5 %: timers and the machine are not better than that, whatever 5 runs say
MEDIAN_EFFICIENCY = 1.2533  # standard error of a median of k runs ~ 1.2533 sigma / sqrt(k) (k >= 3)
MAD_TO_SIGMA = 1.4826
VIRTUAL_GAIN = 0.10  # one anchor: good = at least 10 % better than the program as it is

Verdict = Literal["good", "bad", "ambiguous"]


class AnchorProblem(Exception):
    """The anchors cannot judge anything: the ends do not differ beyond noise, or in the wrong order."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message, self.hint = message, hint


def best_of_run(samples: Sequence[float], lower_is_better: bool = True) -> float:
    """One run's value from the samples it reports: the best (least disturbed by load)."""
    if not samples:
        raise ValueError("no samples")
    return min(samples) if lower_is_better else max(samples)


def _sigma(values: Sequence[float]) -> float:
    """Robust standard deviation: MAD x 1.4826; when the MAD is 0 but the values differ (half of them equal),
    the mean absolute deviation from the median x 1.2533 (its Gaussian equivalent)."""
    if len(values) < 2:
        return 0.0
    centre = median(values)
    deviations = [abs(v - centre) for v in values]
    mad = median(deviations)
    if mad > 0:
        return MAD_TO_SIGMA * mad
    return MEDIAN_EFFICIENCY * sum(deviations) / len(deviations)


def trimmed(values: Sequence[float]) -> list[float]:
    """Without the run farthest from the median when there are 5 or more (one wild run per end is forgiven)."""
    if len(values) < 5:
        return list(values)
    centre = median(values)
    far = max(range(len(values)), key=lambda i: abs(values[i] - centre))
    return [v for i, v in enumerate(values) if i != far]


def auc(better: Sequence[float], worse: Sequence[float], sign: float) -> float:
    """Share of pairs (b, w) where w is worse than b in direction `sign` (+1: higher is worse); ties count half."""
    pairs = [(b, w) for b in better for w in worse]
    if not pairs:
        return 0.0
    return sum(1.0 if (w - b) * sign > 0 else 0.5 if w == b else 0.0 for b, w in pairs) / len(pairs)


def standard_error(sigma: float, runs: int) -> float:
    """Of the median of `runs` runs (the mean of one or two)."""
    return (MEDIAN_EFFICIENCY if runs >= 3 else 1.0) * sigma / math.sqrt(max(runs, 1))


@dataclass(frozen=True)
class Summary:
    """A set of runs as a verdict quotes it: median, spread (relative in log scale, else absolute), runs."""

    centre: float
    spread: float
    runs: int
    relative: bool

    def text(self, unit: str = "") -> str:
        spread = f"{100 * self.spread:.1f}%" if self.relative else f"{self.spread:.4g}{unit}"
        return f"{self.centre:.4g}{unit} ± {spread} ({self.runs} run{'s' if self.runs != 1 else ''})"


@dataclass(frozen=True)
class Judged:
    verdict: Verdict
    position: float  # 0 = like the good anchor, 1 = like the bad one
    margin: float  # in position units
    summary: Summary
    drift: float = 0.0  # taken out of the values (scale units: log for ratios)

    def text(self) -> str:
        drift = f"; drift {100 * self.drift:+.1f}% taken out" if self.drift and self.summary.relative else ""
        return f"position {self.position + 0.0:.2f} ± {self.margin:.2f} (0 good, 1 bad{drift})".replace(
            "-0.00 ", "0.00 "
        )


@dataclass(frozen=True)
class Anchors:
    """The two ends' runs and what follows from them (see the module docstring)."""

    good: tuple[float, ...]  # empty: a virtual good anchor (one-anchor mode)
    bad: tuple[float, ...]
    lower_is_better: bool = True
    gain: float = VIRTUAL_GAIN

    @property
    def virtual(self) -> bool:
        return not self.good

    @property
    def log(self) -> bool:
        return all(v > 0 for v in (*self.good, *self.bad))

    def t(self, value: float) -> float:
        if self.log:
            return math.log(value) if value > 0 else -math.inf
        return value

    @property
    def sign(self) -> float:
        """+1 when a higher value is worse."""
        return 1.0 if self.lower_is_better else -1.0

    @property
    def exact(self) -> bool:
        """Every run of each measured end gave the same value (three runs at least): no noise at all."""
        ends = [e for e in (self.good, self.bad) if e]
        return all(len(e) >= 3 and len(set(e)) == 1 for e in ends)

    @property
    def b(self) -> float:
        return median(self.t(v) for v in self.bad)

    @property
    def g(self) -> float:
        if not self.virtual:
            return median(self.t(v) for v in self.good)
        if self.log:
            return self.b - self.sign * math.log(1 + self.gain)
        return self.b - self.sign * max(abs(self.b) * self.gain, 1e-12)

    @property
    def sigma(self) -> float:
        """Noise of one run, in the scale's units."""
        if self.exact:
            return 0.0
        ends = [[self.t(v) for v in e] for e in (self.good, self.bad) if e]
        pooled = math.sqrt(sum(_sigma(e) ** 2 for e in ends) / len(ends))
        floor = NOISE_FLOOR if self.log else NOISE_FLOOR * max(abs(self.g), abs(self.b))
        return max(pooled, floor)

    def summary(self, values: Sequence[float]) -> Summary:
        ts = [self.t(v) for v in values]
        spread = max(_sigma(ts), 0.0)
        return Summary(median(values), spread, len(values), self.log)

    def separation(self) -> tuple[float, float]:
        """(signed gap of the medians in standard errors, share of pairs where the bad run is worse); the gap is
        +-inf for exact anchors that differ, 0 for exact anchors that agree."""
        signed = (self.b - self.g) * self.sign
        if self.virtual:
            return math.inf, 1.0
        if self.exact:
            return (math.copysign(math.inf, signed) if signed else 0.0), auc(self.good, self.bad, self.sign)
        error = math.hypot(standard_error(self.sigma, len(self.good)), standard_error(self.sigma, len(self.bad)))
        return signed / error, auc(trimmed(self.good), trimmed(self.bad), self.sign)

    def differ(self) -> bool:
        """The bad end is worse than the good end beyond noise."""
        gap, share = self.separation()
        return gap >= Z_SEPARATE and share >= MIN_AUC

    def check(self) -> None:
        """Refuse anchors that cannot judge (AnchorProblem): ends in the wrong order, or no difference beyond noise."""
        if self.virtual or self.differ():
            return
        gap, share = self.separation()
        both = f"good end {self.summary(self.good).text()}, bad end {self.summary(self.bad).text()}"
        if Anchors(self.bad, self.good, self.lower_is_better).differ():
            better = "lower" if self.lower_is_better else "higher"
            raise AnchorProblem(
                f"the bad end is better than the good end ({better} is better): {both}",
                hint="swap the ends, or use --higher-is-better if a higher value is better",
            )
        how = (
            "every run of each end gave the same value"
            if self.exact
            else f"the gap is {gap:.1f} standard errors (needs {Z_SEPARATE:g}) and a bad-end run is worse in "
            f"{100 * share:.0f}% of pairs (needs {100 * MIN_AUC:.0f}%)"
        )
        raise AnchorProblem(
            f"the two ends do not differ beyond noise: {both}; {how}. Nothing to bisect",
            hint="a metric that shows the problem (per-call times, memory), more runs per end (--repeat), "
            "or ends further apart",
        )

    def judge(self, values: Sequence[float], drifts: Sequence[float] = ()) -> Judged:
        """Where `values` (one per run of a candidate) stand between the anchors, and the verdict. `drifts`: how far
        runs of the ends measured beside them were from the anchors (the machine now vs then); their median is
        taken out of the values, and its uncertainty added to the margin. The spread quoted is the one used: the
        step's own (3 runs or more) when larger than the anchors' noise."""
        drift = median(drifts) if drifts else 0.0
        ts = [self.t(v) - drift for v in values]
        g, b = self.g, self.b
        span = b - g
        position = (median(ts) - g) / span
        own = _sigma(ts) if len(ts) >= 3 else 0.0
        sigma = max(self.sigma, own)
        error = math.hypot(standard_error(sigma, len(ts)), standard_error(sigma, len(drifts)) if drifts else 0.0)
        margin = Z_DECIDE * error / abs(span)
        if position + margin < 0.5:
            verdict: Verdict = "good"
        elif position - margin > 0.5:
            verdict = "bad"
        else:
            verdict = "ambiguous"
        return Judged(verdict, position, margin, Summary(median(values), sigma, len(values), self.log), drift)


def distinct(a: Sequence[float], b: Sequence[float], lower_is_better: bool = True) -> tuple[bool, float]:
    """Whether runs `b` differ from runs `a` beyond noise (the anchors' test, either direction), and b/a (ratio of
    medians). Used between neighbouring releases of a timeline and for the boundary check of a bisection."""
    ratio = median(b) / median(a) if median(a) else math.inf
    up = Anchors(tuple(a), tuple(b), lower_is_better).differ()
    return up or Anchors(tuple(b), tuple(a), lower_is_better).differ(), ratio
