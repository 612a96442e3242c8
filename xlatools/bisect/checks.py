"""Tests that decide good/bad for one step, pluggable through the `Test` protocol.

A candidate source prepares a `StepEnv` (the interpreter with that release or
build, extra XLA flags such as `--xla_disable_hlo_passes=...`) and the test
runs in it. `ProgramTest` (implemented here) makes every step a full `run`
bundle and judges it by its `Rule` (bisect/rule.py): exit status, a regex on the
output or a dump file, or a metric the program writes. `ReplayTest` replays a repro pack in each
step's interpreter (`xlatools.replay.repro.run_pack`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from xlatools.bisect.engine import StepVerdict
from xlatools.bisect.rule import Rule
from xlatools.errors import EnvironmentMissing, Interrupted, UsageError, XlaToolsError
from xlatools.records.bisect import ProgramTestSpec, ReplayTestSpec, StepDetail, TestSpec
from xlatools.records.build import BazelProcesses
from xlatools.vocab import ExitCodeMode, Platform, ReproOutcome, Status, StepOutcome

if TYPE_CHECKING:
    from xlatools.cluster.spec import ClusterSpec
    from xlatools.bisect.metric_test import MetricTest
    from xlatools.console import Reporter
    from xlatools.records.run import RunManifest
    from xlatools.run.program import Program

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
    quiet: bool = False  # the program's output only in the step's logs (steps running side by side)
    bazel_processes: BazelProcesses | None = None  # a candidate built for this step: how bazel ran its actions


class SkipStep(Exception):
    """The candidate cannot be installed, built or run: `skip`, never good or bad."""

    def __init__(self, reason: str, bundle: str | None = None, install_s: float = 0.0):
        super().__init__(reason)
        self.reason, self.bundle, self.install_s = reason, bundle, install_s


class Test(Protocol):
    def describe(self) -> TestSpec: ...

    def check(self, step: StepEnv, out_root: Path, name: str) -> StepVerdict: ...


@dataclass(frozen=True, kw_only=True)
class TestOptions:
    """The test part of every bisect command line."""

    __test__ = False  # not a pytest class, despite the name
    program: str | None = None
    args: tuple[str, ...] = ()
    module: str | None = None
    replay: Path | None = None
    rule: Rule = field(default_factory=Rule)
    presets: tuple[str, ...] = ()
    xla_flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    platform: Platform | None = None
    timeout: float | None = None
    cwd: Path = field(default_factory=Path.cwd)
    cluster: ClusterSpec | None = None  # --executor slurm: each step's run is a Slurm job (xlatools/cluster)


def build_test(opts: TestOptions, reporter: Reporter) -> ProgramTest | ReplayTest | MetricTest:
    """The Test the options describe (a program run, or a repro pack), checked before anything runs."""
    if opts.replay is not None:
        if opts.cluster is not None:
            raise UsageError(
                "--replay steps run on this machine; --executor slurm goes with a program test (-- prog.py)"
            )
        if opts.program or opts.module:
            raise UsageError("--replay PACK and a program (-- prog.py) are two tests; give one")
        if opts.rule.metric is not None:
            raise UsageError("--metric measures a program run; a repro pack replay has no metrics", hint="-- prog.py")
        test = ReplayTest(Path(opts.replay).resolve())
        test.validate()
        return test
    if not opts.program and not opts.module:
        raise UsageError(
            "no test: give a program after -- (exit 0 = good), or --replay PACK",
            hint="e.g. xlatools bisect releases --good 0.4.28 --bad 0.4.31 -- check.py",
        )
    from xlatools.run.program import parse_program

    from xlatools.bisect.metric_test import wrap

    opts.rule.validate()
    return wrap(ProgramTest(parse_program(opts.program, opts.module, list(opts.args), opts.cwd), opts, reporter))


@dataclass(frozen=True)
class ProgramTest:
    """Run the program (a full `run` bundle per step) and judge it by the options' rule."""

    program: Program
    opts: TestOptions
    reporter: Reporter  # the run's own progress and the program's output

    @property
    def rule(self) -> Rule:
        return self.opts.rule

    def describe(self) -> ProgramTestSpec:
        """What identifies the test, redacted: the state file keeps it, and the folder name hashes it."""
        from xlatools.redact import redact_argv

        o = self.opts
        env = redact_argv([part for item in o.env for part in ("--env", item)])[1::2]
        return ProgramTestSpec(
            program=self.program.label,
            args=redact_argv(list(self.program.args)),
            rule=o.rule.spec(),
            presets=list(o.presets),
            xla_flags=redact_argv(list(o.xla_flags)),
            env=env,
            platform=o.platform,
            timeout=o.timeout,
        )

    def execute(self, step: StepEnv, out_root: Path, name: str) -> tuple[RunManifest, float]:
        """One run of the program in `step` (a run bundle under `out_root`): its record and the seconds it took."""
        import os

        from xlatools.records.run import ProfileRun
        from xlatools.run.execute import execute_plan, prepare
        from xlatools.run.plan import RunRequest

        o = self.opts
        env = [*o.env, *step.env]
        if o.rule.metric is not None:
            env.append("XLATOOLS_METRICS_FILE={bundle}/metrics.json")
        request = RunRequest(
            program=self.program,
            python=step.python,
            dump=o.rule.needs_dump() or step.dump,
            presets=list(o.presets),
            xla_flags=[*o.xla_flags, *step.xla_flags],
            env=env,
            platform=o.platform,
            timeout=o.timeout,
            name=name,
            quiet=True if step.quiet else None,
        )
        caller_env = dict(os.environ)
        t0 = time.monotonic()  # the target probe (once per new environment) counts as run time
        try:
            prepared = prepare(request, ProfileRun(), {}, caller_env, Path(o.cwd), self.reporter)
        except EnvironmentMissing as exc:  # e.g. an interpreter that does not start
            raise SkipStep(f"{CANNOT_RUN}: {exc.message}") from None
        except UsageError as exc:  # e.g. a flag or preset this jaxlib lacks
            raise SkipStep(f"not runnable with these options: {exc.message}") from None
        # The program's own status decides (--bad-exit, --skip-exit), not xlatools' exit-code scheme.
        record = execute_plan(
            prepared,
            out_root,
            ["bisect", "step", name],
            caller_env,
            self.reporter,
            echo_stdout_to_stderr=True,
            exit_code_mode=ExitCodeMode.PROGRAM,
            cluster=o.cluster,
        ).record
        if record.status == Status.INTERRUPTED:
            raise Interrupted(f"interrupted during step {name}; run the same command again to continue")
        if record.slurm is not None and record.slurm.killed_by_slurm:  # the executor, not the candidate: never good/bad
            raise SkipStep(record.slurm.killed_by_slurm, record.bundle)
        return record, time.monotonic() - t0

    def check(self, step: StepEnv, out_root: Path, name: str) -> StepVerdict:
        record, run_s = self.execute(step, out_root, name)
        judged = self.opts.rule.judge(record, Path(record.bundle))
        return StepVerdict(
            judged.outcome,
            judged.reason,
            record.bundle,
            step.install_s,
            run_s,
            StepDetail(exit_code=record.exit_code, jax=record.jax.jax, jaxlib=record.jax.jaxlib),
        )


# A pack a bisection can use judges each step by the pack alone: a good run's recorded results, replayed by the bad
# jaxlib, make one whose expected outcome is the mismatch against them (a good step matches them, a bad one not).
GOLDEN_PACK = (
    "make the pack from a run of a good jaxlib that dumped snapshots (`xlatools run PROG --python GOOD --preset "
    "dump:hlo --preset dump:snapshots`), replayed by the bad one: `xlatools repro pack artifacts/latest "
    "--python BAD -o PACK` expects the mismatch against the good run's recorded results"
)


@dataclass(frozen=True)
class ReplayTest:
    """`--replay PACK`: the repro pack is replayed in each step's interpreter (xlatools.replay.repro.run_pack):
    reproduced = bad, not reproduced = good, cannot run here (no jax, a flag or module this jaxlib lacks) = skip."""

    pack: Path

    def describe(self) -> ReplayTestSpec:
        return ReplayTestSpec(pack=str(self.pack))

    def validate(self) -> None:
        """Before any step: the pack is whole (a damaged one is bad input once, not a skip per step) and needs
        no reference interpreter (`repro run` takes those from --reference-python, which bisect has not)."""
        import tempfile

        from xlatools.replay.pack import extract
        from xlatools.replay.pack_index import read_index

        if not self.pack.is_file():
            raise UsageError(
                f"--replay {self.pack}: no such repro pack", hint="make one with `xlatools repro pack BUNDLE`"
            )
        with tempfile.TemporaryDirectory(prefix="xlatools-pack-") as folder:
            index = read_index(extract(self.pack, Path(folder) / "pack"), self.pack)
        from xlatools.replay.repro_verdict import nothing_to_reproduce

        healthy = nothing_to_reproduce(index.modules, index.oracle)
        if healthy:  # every step would be "not reproduced": nothing tells good from bad
            raise UsageError(f"--replay {self.pack}: {healthy}", hint=GOLDEN_PACK)
        if index.reference_pythons:
            jaxlibs = ", ".join(str(r.jaxlib) for r in index.reference_pythons)
            raise UsageError(
                f"--replay {self.pack}: the pack's outcomes are judged against reference interpreter(s) (jaxlib "
                f"{jaxlibs}), which a bisection step does not have: it replays the pack in the step's interpreter "
                "alone",
                hint=GOLDEN_PACK,
            )

    def check(self, step: StepEnv, out_root: Path, name: str) -> StepVerdict:
        from xlatools.replay.repro import run_pack

        if step.xla_flags:
            raise UsageError(
                "--replay cannot be combined with a search over XLA flags (bisect passes)",
                hint="bisect passes with a program test: -- prog.py",
            )
        t0 = time.monotonic()
        try:
            answer = run_pack(self.pack, python=step.python, out_root=out_root, argv=["bisect", "step", name])
        except XlaToolsError as exc:
            if isinstance(exc, (Interrupted, UsageError)):
                raise  # a damaged pack is bad input for the whole bisection, not one step
            raise SkipStep(f"replay could not run: {exc.message}") from None
        outcome = {
            ReproOutcome.REPRODUCED: StepOutcome.BAD,
            ReproOutcome.NOT_REPRODUCED: StepOutcome.GOOD,
            ReproOutcome.CANNOT_RUN: StepOutcome.SKIP,
            ReproOutcome.NOTHING_TO_REPRODUCE: StepOutcome.SKIP,
        }[ReproOutcome(answer.outcome)]  # refused in validate
        return StepVerdict(
            outcome, f"{answer.outcome}: {answer.reason}", answer.bundle, step.install_s, time.monotonic() - t0
        )
