"""How a program test's finished run becomes good, bad or skip: the `Rule` (exit status, a regex on the
output or a dump file, a metric: xlatools' own, run/metrics.py, or one the program writes) and the files its
regex searches."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from xlatools.errors import REGEX_ERRORS, UsageError
from xlatools.records.bisect import RuleSpec
from xlatools.vocab import StepOutcome

if TYPE_CHECKING:
    from xlatools.records.run import RunManifest


class Judgement(NamedTuple):
    outcome: StepOutcome
    reason: str


class Rule(RuleSpec):
    """How a finished run becomes good/bad/skip (the fields are the spec's)."""

    def validate(self) -> None:
        if self.match is not None:
            try:
                pattern = re.compile(self.match)
            except REGEX_ERRORS as exc:
                raise UsageError(f"--match {self.match!r}: not a regular expression ({exc})") from None
            if pattern.search(""):  # '', '.*', 'a?': found in any output, so every step would be bad
                raise UsageError(
                    f"--match {self.match!r} matches the empty text, so it is found everywhere",
                    hint="give a pattern that needs at least one character, e.g. 'Mismatch'",
                )
        for option, codes in (("--bad-exit", self.bad_exit), ("--skip-exit", self.skip_exit)):
            wrong = [code for code in codes if not 0 <= code <= 255]
            if wrong:
                raise UsageError(
                    f"{option} {wrong[0]}: an exit status is 0 to 255",
                    hint="a program killed by a signal N exits 128+N",
                )
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise UsageError(f"--threshold {self.threshold}: must be a finite number", hint="e.g. --threshold 0.5")
        if self.match_in != "output" and not (self.match_in.startswith("dump:") and len(self.match_in) > 5):
            raise UsageError(
                f"--match-in {self.match_in!r}", hint="use output or dump:PART (e.g. dump:after_optimizations)"
            )
        if self.metric is not None:
            from xlatools.run.metrics import parse_metric

            parse_metric(self.metric)  # `run_s:` or a module on a process metric: exit 2 before any step
        if self.threshold is not None and self.metric is None:
            raise UsageError("--threshold goes with --metric", hint="e.g. --metric run_s --threshold 0.5")
        noise_aware = self.metric is not None and self.threshold is None
        for option, value, least in (("--repeat", self.repeat, 3), ("--max-runs", self.max_runs, 1)):
            if value is not None and not noise_aware:
                raise UsageError(
                    f"{option} goes with --metric NAME without --threshold (runs measured against the two ends)"
                )
            if value is not None and not least <= value <= 100:
                raise UsageError(f"{option} {value}: must be {least} to 100")
        if self.match is not None and self.metric is not None:
            raise UsageError("--match and --metric cannot be combined; pick one test")

    def needs_dump(self) -> bool:
        return self.match is not None and self.match_in.startswith("dump:")

    def spec(self) -> RuleSpec:
        return RuleSpec(**vars(self))

    def judge(self, manifest: RunManifest, bundle: Path) -> Judgement:
        code = manifest.exit_code
        if code in self.skip_exit:
            return Judgement(StepOutcome.SKIP, f"exit {code} means skip")
        if self.metric is not None:
            return self._judge_metric(self.metric, code, manifest, bundle)
        if self.match is not None:
            found = _search(self.match, self.match_in, bundle, self.hlo_module)
            unasked = self._unasked_failure(code)
            if unasked:  # the program failed in a way the test did not ask about: it says nothing about the match
                return Judgement(StepOutcome.SKIP, unasked)
            if found:
                return Judgement(StepOutcome.BAD, f"/{self.match}/ found in {found}")
            if code == 0:
                return Judgement(StepOutcome.GOOD, f"/{self.match}/ not found in {self.match_in}")
            return Judgement(
                StepOutcome.SKIP, f"/{self.match}/ not found and the program failed (exit {code}): cannot tell"
            )
        if code == 0:
            return Judgement(StepOutcome.GOOD, "exit 0")
        if self.bad_exit and code not in self.bad_exit:
            return Judgement(
                StepOutcome.SKIP, f"exit {code} is not one of --bad-exit {','.join(map(str, self.bad_exit))}"
            )
        return Judgement(StepOutcome.BAD, f"exit {code} ({manifest.status})")

    def _unasked_failure(self, code: int | None) -> str | None:
        """Why a --match step whose program failed is a skip, or None: a dump match (it is about a compiled module)
        with an exit status --bad-exit does not name, or a crash (a signal) that --bad-exit does not name."""
        if code in (0, None) or code in self.bad_exit:
            return None
        crashed = code < 0 or code >= 128
        if crashed or self.match_in.startswith("dump:"):
            what = f"crashed (exit {code})" if crashed else f"failed (exit {code})"
            named = f"--bad-exit {','.join(map(str, self.bad_exit))}" if self.bad_exit else "no --bad-exit"
            return f"the program {what}, which the test did not ask about ({named}): skip"
        return None

    def _judge_metric(self, metric: str, code: int | None, manifest: RunManifest, bundle: Path) -> Judgement:
        """--threshold: one run's value (bisect/samples.threshold_value: xlatools' own metric as run/metrics.py
        reduces it, or the program's) against it."""
        from xlatools.bisect.samples import MetricMissing, threshold_value

        try:
            value = threshold_value(manifest, bundle, metric, not self.higher_is_better)
        except MetricMissing as exc:
            return Judgement(StepOutcome.SKIP, f"no metric {metric} (exit {code}): {exc.reason}")
        worse = value < self.threshold if self.higher_is_better else value > self.threshold
        side = "below" if self.higher_is_better else "above"
        return Judgement(
            StepOutcome.BAD if worse else StepOutcome.GOOD,
            f"{metric} = {value:g} ({'' if worse else 'not '}{side} {self.threshold:g}; 1 run, spread not measured)",
        )


def _search(pattern: str, where: str, bundle: Path, module: str | None = None) -> str | None:
    """The first file where `pattern` is found: the program's output, or dump files whose name holds PART
    (only module `module`'s, by id or name, when given)."""
    regex = re.compile(pattern)
    if where == "output":
        files = [bundle / "stdout.log", bundle / "stderr.log"]
    else:
        part = where[len("dump:") :]
        mine = _module_files(bundle / "xla_dump", module) if module else None
        files = sorted(
            p for p in (bundle / "xla_dump").rglob("*.txt") if part in p.name and (mine is None or p in mine)
        )
    for path in files:
        try:
            if regex.search(path.read_text(errors="replace")):
                return path.name
        except OSError:
            continue
    return None


def _module_files(root: Path, ref: str) -> set[Path]:
    """Every file of the modules `ref` names (an id, or a name several compilations may share) in a dump."""
    from xlatools.run.dumps import index_dump

    if not root.is_dir():
        return set()
    index = index_dump(root)
    chosen = (
        [index.modules[int(ref)]]
        if ref.isdigit() and int(ref) in index.modules
        else [m for m in index.modules.values() if ref in (m.name, m.short_name)]
    )
    return {root / f for m in chosen for f in m.files}
