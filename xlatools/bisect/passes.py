"""Which HLO passes make the difference: delta debugging over `--xla_disable_hlo_passes`.

1. Baseline: the test runs once with a per-pass dump (`--xla_dump_hlo_pass_re=.*`); it must be bad.
   The passes that changed a module (per-pass dump files) are the candidates, in pipeline order, less
   those left enabled: the ones the backend's compilation needs (bisect/pass_rules.py) and
   `--exclude-pass`; `--include-pass` adds a pass (or puts a needed one back).
2. The search (bisect/pass_search.py): disable them all, leave enabled whatever breaks the program,
   add passes that take over, then a prefix search for a 1-minimal set whose disabling turns bad into
   good (bisect/pass_run.py drives it through the recorded steps).
   A step with passes disabled that crashes, or fails otherwise than the test's bad, is a skip.
Result: the pass names, their pipelines, what was left enabled or added and why, and the HLO
before/after each culprit.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from xlatools.bisect.checks import CANNOT_RUN, StepEnv
from xlatools.bisect.engine import EndpointProblem, StepVerdict
from xlatools.bisect.pass_rules import Baseline, baseline_of, judge_disabled
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.records.bisect import CulpritHlo, PassFound
from xlatools.run.dumps import DumpIndex, Module, PassStep
from xlatools.vocab import StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.checks import Test
    from xlatools.bisect.rule import Rule

BASELINE = "baseline"
DUMPED = "dump:"  # a key so prefixed runs its set of disabled passes with a per-pass dump
MARKERS = ("pipeline-start", "pipeline-end")
DISABLE = "--xla_disable_hlo_passes="


@dataclass
class PassSource:
    """Flags of a step: the baseline dumps every pass; a key is the comma-joined set of passes to disable
    (with a per-pass dump when it is in `dump_keys` or prefixed DUMPED)."""

    python: str
    dump_keys: set[str] = field(default_factory=set)

    def prepare(self, key: str, label: str) -> StepEnv:
        if key == BASELINE:
            return StepEnv(self.python, ("--xla_dump_hlo_pass_re=.*",), dump=True)
        passes = key.removeprefix(DUMPED)
        if key.startswith(DUMPED) or key in self.dump_keys:
            return StepEnv(self.python, (f"{DISABLE}{passes}", "--xla_dump_hlo_pass_re=.*"), dump=True)
        return StepEnv(self.python, (f"{DISABLE}{passes}",))


@dataclass(frozen=True)
class DisabledPassesTest:
    """The test, with steps that disable passes judged by pass_rules.judge_disabled: a crash, or any failure
    that is not the test's bad, is a skip (the set broke the program), never bad."""

    test: Test
    rule: Rule
    baseline: Callable[[], Baseline]  # what the test's bad looked like in the baseline

    def describe(self):
        return self.test.describe()

    def check(self, step: StepEnv, out_root: Path, name: str) -> StepVerdict:
        verdict = self.test.check(step, out_root, name)
        if not any(flag.startswith(DISABLE) for flag in step.xla_flags):
            return verdict
        return judge_disabled(verdict, self.rule, self.baseline())


def check_pass_names(option: str, names: list[str]) -> None:
    """--exclude-pass / --include-pass: one pass name each (no comma: the XLA flag is a comma list)."""
    for name in names:
        if not name.strip() or "," in name or name != name.strip():
            raise UsageError(
                f"{option} {name!r}: not a pass name",
                hint=f"one pass a time, e.g. {option} copy-insertion (repeat the option for more)",
            )


def _pass_steps(module: Module) -> list[PassStep]:
    # Steps without a `.before_<next>` part are a pass's own inner dumps (copy-insertion's), not passes.
    return [s for s in module.steps if s.pass_name not in MARKERS and s.next_pass is not None]


def passes_from_dump(index: DumpIndex, module: str | None = None) -> list[PassFound]:
    """The passes that changed a module, first seen first, with their pipelines and modules."""
    modules = [index.find(module)] if module else sorted(index.modules.values(), key=lambda m: m.id)
    found: dict[str, PassFound] = {}
    for mod in modules:
        for step in _pass_steps(mod):
            entry = found.setdefault(step.pass_name, PassFound(name=step.pass_name))
            if step.pipeline not in entry.pipelines:
                entry.pipelines.append(step.pipeline)
            if mod.name not in entry.modules:
                entry.modules.append(mod.name)
    return list(found.values())


def culprit_hlo(index: DumpIndex, culprits: list[str], folder: Path, module: str | None = None) -> list[CulpritHlo]:
    """For each culprit, per module it changed: the dump files before and after it in the bad run, and a
    unified diff of the two written to `folder`/<pass>.<module>.diff."""
    from xlatools.fsutil import atomic_write_text

    modules = [index.find(module)] if module else sorted(index.modules.values(), key=lambda m: m.id)
    found = []
    for mod in modules:
        previous = mod.before_file
        for step in mod.steps:
            if step.pass_name in culprits and step.next_pass is not None and previous:
                before, after = index.root / previous, index.root / step.file
                diff = "".join(
                    difflib.unified_diff(
                        before.read_text(errors="replace").splitlines(keepends=True),
                        after.read_text(errors="replace").splitlines(keepends=True),
                        before.name,
                        after.name,
                    )
                )
                diff_path = folder / f"{step.pass_name}.{mod.name}.diff"
                atomic_write_text(diff_path, diff)
                found.append(
                    CulpritHlo(
                        pass_=step.pass_name,
                        pipeline=step.pipeline,
                        module=mod.name,
                        before=str(before),
                        after=str(after),
                        diff=str(diff_path),
                        lines_changed=sum(1 for line in diff.splitlines() if line[:1] in "+-") - 2,
                    )
                )
            previous = step.file
    return found


def check_baseline(outcome: StepOutcome, reason: str) -> None:
    if outcome == StepOutcome.GOOD:
        raise EndpointProblem(
            f"the test is good with every pass enabled ({reason}): there is nothing to bisect",
            hint="the test must fail (bad) on the program as it is",
        )
    if outcome == StepOutcome.SKIP and reason.startswith(CANNOT_RUN):  # every step runs here: none could
        raise EnvironmentMissing(
            f"the baseline run could not be made: {reason}", hint="fix the environment (see above)"
        )
    if outcome == StepOutcome.SKIP:
        raise EndpointProblem(f"the baseline run could not be judged: {reason}", hint="check the test on its own first")


def recorded_baseline(steps) -> Baseline:
    """The recorded baseline's exit status and XLA error (nothing yet: an empty Baseline)."""
    first = next((s for s in steps if s.key == BASELINE and s.attempt == 0), None)
    if first is None:
        return Baseline()
    return baseline_of(first.detail.exit_code if first.detail else None, first.bundle)


def dumped_passes(bundle: str | None, module: str | None) -> list[PassFound]:
    """The passes that changed a module in a step's per-pass dump ([] without one)."""
    from xlatools.run.dumps import index_dump

    root = Path(bundle or "") / "xla_dump"
    if not bundle or not root.is_dir():
        return []
    index = index_dump(root)
    if module:
        try:
            index.find(module)
        except UsageError:  # the module was not compiled in that run
            return []
    return passes_from_dump(index, module)


def dump_platform(index: DumpIndex) -> str | None:
    return next((m.platform for m in sorted(index.modules.values(), key=lambda m: m.id) if m.platform), None)
