"""Tests that decide good/bad for one step, pluggable through the `Test` protocol.

A candidate source prepares a `StepEnv` (the interpreter with that release or
build, extra XLA flags such as `--xla_disable_hlo_passes=...`) and the test
runs in it. `ProgramTest` (implemented here) makes every step a full `run`
bundle and judges it by exit status, by a regex on the output or a dump file,
or by a metric the program writes. `ReplayTest` adapts a repro pack from the
replay capability (`xlatools.replay`), imported lazily: when that capability is
not part of this build, `--replay` is refused with exit 3.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xlatools.bisect.engine import Verdict
from xlatools.errors import EnvironmentMissing, Interrupted, UsageError, XlaToolsError

CANNOT_RUN = "cannot run here"  # a skip whose reason starts so: this machine, not the candidate, is the problem


@dataclass(frozen=True)
class StepEnv:
    """Where one candidate runs: its interpreter and what the source adds to the test."""

    python: str
    xla_flags: tuple[str, ...] = ()
    install_s: float = 0.0
    note: str = ""
    dump: bool = False  # force an XLA dump (the passes baseline lists passes from it)
    env: tuple[str, ...] = ()  # K=V for the program, e.g. PYTHONPATH of a freshly built jaxlib


class SkipStep(Exception):
    """The candidate cannot be installed, built or run: `skip`, never good or bad."""

    def __init__(self, reason: str, bundle: str | None = None, install_s: float = 0.0):
        super().__init__(reason)
        self.reason, self.bundle, self.install_s = reason, bundle, install_s


class Test(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def check(self, step: StepEnv, out_root: Path, name: str) -> Verdict: ...


@dataclass(frozen=True)
class Rule:
    """How a finished run becomes good/bad/skip."""

    bad_exit: tuple[int, ...] = ()  # empty: any non-zero exit is bad
    skip_exit: tuple[int, ...] = (125,)  # git bisect run's convention
    match: str | None = None
    match_in: str = "output"  # "output" or "dump:<part of a dump file name>", e.g. dump:after_optimizations
    metric: str | None = None
    threshold: float | None = None
    higher_is_better: bool = False

    def validate(self) -> None:
        if self.match is not None:
            try:
                pattern = re.compile(self.match)
            except re.error as exc:
                raise UsageError(f"--match {self.match!r}: not a regular expression ({exc})") from None
            if pattern.search(""):  # '', '.*', 'a?': found in any output, so every step would be bad
                raise UsageError(f"--match {self.match!r} matches the empty text, so it is found everywhere",
                                 hint="give a pattern that needs at least one character, e.g. 'Mismatch'")
        for option, codes in (("--bad-exit", self.bad_exit), ("--skip-exit", self.skip_exit)):
            wrong = [code for code in codes if not 0 <= code <= 255]
            if wrong:
                raise UsageError(f"{option} {wrong[0]}: an exit status is 0 to 255",
                                 hint="a program killed by a signal N exits 128+N")
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise UsageError(f"--threshold {self.threshold}: must be a finite number", hint="e.g. --threshold 0.5")
        if self.match_in != "output" and not (self.match_in.startswith("dump:") and len(self.match_in) > 5):
            raise UsageError(f"--match-in {self.match_in!r}", hint="use output or dump:PART (e.g. dump:after_optimizations)")
        if (self.metric is None) != (self.threshold is None):
            raise UsageError("--metric and --threshold go together", hint="e.g. --metric step_time_s --threshold 0.5")
        if self.match is not None and self.metric is not None:
            raise UsageError("--match and --metric cannot be combined; pick one test")

    def needs_dump(self) -> bool:
        return self.match is not None and self.match_in.startswith("dump:")

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, (), False)}

    def judge(self, manifest: dict[str, Any], bundle: Path) -> tuple[str, str]:
        code = manifest.get("exit_code")
        if code in self.skip_exit:
            return "skip", f"exit {code} means skip"
        if self.metric is not None:
            return self._judge_metric(code, bundle)
        if self.match is not None:
            found = _search(self.match, self.match_in, bundle)
            if found:
                return "bad", f"/{self.match}/ found in {found}"
            if code == 0:
                return "good", f"/{self.match}/ not found in {self.match_in}"
            return "skip", f"/{self.match}/ not found and the program failed (exit {code}): cannot tell"
        if code == 0:
            return "good", "exit 0"
        if self.bad_exit and code not in self.bad_exit:
            return "skip", f"exit {code} is not one of --bad-exit {','.join(map(str, self.bad_exit))}"
        return "bad", f"exit {code} ({manifest.get('status')})"

    def _judge_metric(self, code: int | None, bundle: Path) -> tuple[str, str]:
        try:
            value = float(json.loads((bundle / "metrics.json").read_text())[self.metric])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return "skip", f"no metric {self.metric} in metrics.json (exit {code}; {type(exc).__name__})"
        worse = value < self.threshold if self.higher_is_better else value > self.threshold
        side = "below" if self.higher_is_better else "above"
        return ("bad" if worse else "good"), f"{self.metric} = {value:g} ({'' if worse else 'not '}{side} {self.threshold:g})"


def _search(pattern: str, where: str, bundle: Path) -> str | None:
    regex = re.compile(pattern)
    if where == "output":
        files = [bundle / "stdout.log", bundle / "stderr.log"]
    else:
        part = where[len("dump:"):]
        files = sorted(p for p in (bundle / "xla_dump").rglob("*.txt") if part in p.name)
    for path in files:
        try:
            if regex.search(path.read_text(errors="replace")):
                return path.name
        except OSError:
            continue
    return None


@dataclass(frozen=True)
class TestOptions:
    """The test part of every bisect command line."""

    __test__ = False  # not a pytest class, despite the name
    program: str | None = None
    args: tuple[str, ...] = ()
    module: str | None = None
    replay: Path | None = None
    rule: Rule = Rule()
    presets: tuple[str, ...] = ()
    xla_flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    platform: str | None = None
    timeout: float | None = None
    cwd: Path = field(default_factory=Path.cwd)


def build_test(opts: TestOptions):
    """The Test the options describe (a program run, or a repro pack), checked before anything runs."""
    if opts.replay is not None:
        if opts.program or opts.module:
            raise UsageError("--replay PACK and a program (-- prog.py) are two tests; give one")
        test = ReplayTest(Path(opts.replay).resolve())
        test.validate()
        return test
    if not opts.program and not opts.module:
        raise UsageError("no test: give a program after -- (exit 0 = good), or --replay PACK",
                         hint="e.g. xlatools bisect releases --good 0.4.28 --bad 0.4.31 -- check.py")
    if opts.platform is not None and opts.platform not in ("auto", "cpu", "gpu"):
        raise UsageError(f"--platform {opts.platform}: expected auto, cpu or gpu")
    from xlatools.run.program import parse_program

    opts.rule.validate()
    return ProgramTest(parse_program(opts.program, opts.module, list(opts.args), opts.cwd), opts)


@dataclass(frozen=True)
class ProgramTest:
    """Run the program (a full `run` bundle per step) and judge it by the options' rule."""

    program: Any  # xlatools.run.program.Program
    opts: TestOptions

    @property
    def rule(self) -> Rule:
        return self.opts.rule

    def describe(self) -> dict[str, Any]:
        o = self.opts
        return {"kind": "program", "program": self.program.label, "args": list(self.program.args),
                "rule": o.rule.describe(), "presets": list(o.presets), "xla_flags": list(o.xla_flags),
                "env": list(o.env), "platform": o.platform, "timeout": o.timeout}

    def check(self, step: StepEnv, out_root: Path, name: str) -> Verdict:
        import os

        from xlatools.run.execute import execute_plan, prepare
        from xlatools.run.plan import ProfileRun, RunRequest

        o = self.opts
        env = [*o.env, *step.env]
        if o.rule.metric is not None:
            env.append("XLATOOLS_METRICS_FILE={bundle}/metrics.json")
        request = RunRequest(program=self.program, python=step.python, dump=o.rule.needs_dump() or step.dump,
                             presets=list(o.presets), xla_flags=[*o.xla_flags, *step.xla_flags], env=env,
                             platform=o.platform, timeout=o.timeout, name=name)
        caller_env = dict(os.environ)
        t0 = time.monotonic()  # the target probe (once per new environment) counts as run time
        try:
            prepared = prepare(request, ProfileRun(), {}, caller_env, Path(o.cwd))
        except EnvironmentMissing as exc:  # e.g. an interpreter that does not start
            raise SkipStep(f"{CANNOT_RUN}: {exc.message}") from None
        except UsageError as exc:  # e.g. a flag or preset this jaxlib lacks
            raise SkipStep(f"not runnable with these options: {exc.message}") from None
        # The program's own status decides (--bad-exit, --skip-exit), not xlatools' exit-code scheme.
        manifest = execute_plan(prepared, out_root, ["bisect", "step", name], caller_env,
                                echo_stdout_to_stderr=True, exit_code_mode="program").manifest
        run_s = time.monotonic() - t0
        if manifest["status"] == "interrupted":
            raise Interrupted(f"interrupted during step {name}; run the same command again to continue")
        outcome, reason = o.rule.judge(manifest, Path(manifest["bundle"]))
        return Verdict(outcome, reason, manifest["bundle"], step.install_s, run_s,
                       {"exit_code": manifest.get("exit_code"), "jax": manifest.get("jax", {}).get("jax"),
                        "jaxlib": manifest.get("jax", {}).get("jaxlib")})


@dataclass(frozen=True)
class ReplayTest:
    """`--replay PACK`: the repro pack is replayed in each step's interpreter (xlatools.replay.repro.run_pack):
    reproduced = bad, not reproduced = good, cannot run here (no jax, a flag or module this jaxlib lacks) = skip."""

    pack: Path

    def describe(self) -> dict[str, Any]:
        return {"kind": "replay", "pack": str(self.pack)}

    def validate(self) -> None:
        if not self.pack.is_file():
            raise UsageError(f"--replay {self.pack}: no such repro pack", hint="make one with `xlatools repro pack BUNDLE`")

    def check(self, step: StepEnv, out_root: Path, name: str) -> Verdict:
        from xlatools.replay.repro import run_pack

        if step.xla_flags:
            raise UsageError("--replay cannot be combined with a search over XLA flags (bisect passes)",
                             hint="bisect passes with a program test: -- prog.py")
        t0 = time.monotonic()
        try:
            answer = run_pack(self.pack, python=step.python, out_root=out_root, argv=["bisect", "step", name])
        except XlaToolsError as exc:
            if isinstance(exc, (Interrupted, UsageError)):
                raise  # a damaged pack is bad input for the whole bisection, not one step
            raise SkipStep(f"replay could not run: {exc.message}") from None
        outcome = {"reproduced": "bad", "not-reproduced": "good", "cannot-run": "skip"}[answer.outcome]
        return Verdict(outcome, f"{answer.outcome}: {answer.reason}", answer.bundle, step.install_s,
                       time.monotonic() - t0)
