"""Plan a reduction (pure): what is interesting (the oracle), where candidates run, which strategies.

Oracles, one per reduction:
- `mismatch`: the test run's outputs differ from a reference's on the same inputs
  (`--reference cpu`, `--reference-python PY`), tolerances as in replay;
- `recorded`: the test run's outputs differ from the result a snapshot recorded (only
  edits that keep the kept outputs' values apply: output dropping, inlining);
- `error`: the test run fails (compile error, runtime error, crash) with a message
  matching `--error REGEX`;
- `script`: `--script CMD` exits 1-127 (interesting), 0 (not), 125 (cannot tell:
  skip), like `git bisect run`; the candidate's HLO file is its last argument.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from xlatools.errors import REGEX_ERRORS, UsageError
from xlatools.records.reduce import OracleSpec, ReducePlanRecord, ReduceRequest
from xlatools.records.replay import PlannedModule, PlannedRun
from xlatools.replay.plan import ReplayRequest, RunConfig, plan_replay
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import OracleKind, ReduceStrategy, choices

__all__ = ["MAX_JOBS", "OracleSpec", "ReducePlan", "ReduceRequest", "oracle_of", "plan_reduce"]
MAX_JOBS = 64  # candidates side by side; each keeps a test (and reference) process of its own


@dataclass
class ReducePlan:
    request: ReduceRequest
    module: ModuleSource
    oracle: OracleSpec
    test: RunConfig
    reference: RunConfig | None
    name: str

    def record(self) -> ReducePlanRecord:
        """The plan as the manifest (and `--dry-run --json`) shows it."""
        module = PlannedModule(name=self.module.name, id=self.module.id, files=self.module.files())
        from xlatools.replay.jobs import input_source

        return ReducePlanRecord(
            request=self.request,
            module=module,
            oracle=self.oracle,
            describe=self.oracle.describe(),
            test=_planned(self.test),
            reference=_planned(self.reference) if self.reference else None,
            name=self.name,
            input_source=input_source(self.request.inputs, self.request.seed, self.module.snapshot),
        )


def _planned(run: RunConfig) -> PlannedRun:
    return PlannedRun(
        label=run.label,
        role=run.role,
        python=run.python,
        platform=run.platform,
        xla_flags=list(run.xla_flags),
        flag_sources=dict(run.flag_sources),
    )


def oracle_of(request: ReduceRequest, has_recorded_result: bool) -> OracleSpec:
    chosen = [
        bool(request.references or request.reference_pythons),
        bool(request.error),
        bool(request.script),
        request.crash is not None,
    ]
    if sum(chosen) > 1:
        raise UsageError("give one oracle: --reference/--reference-python, --error or --script")
    if request.crash is not None:
        return OracleSpec(kind=OracleKind.CRASH, crash=request.crash)
    if request.error:
        try:
            re.compile(request.error)
        except REGEX_ERRORS as exc:
            raise UsageError(f"--error {request.error!r}: not a regular expression ({exc})") from None
        return OracleSpec(kind=OracleKind.ERROR, error_regex=request.error)
    if request.script:
        return OracleSpec(kind=OracleKind.SCRIPT, script=checked_script(request.script))
    if len(request.references) + len(request.reference_pythons) > 1:
        raise UsageError("reduce compares with one reference: give --reference cpu or one --reference-python")
    if chosen[0]:
        return OracleSpec(kind=OracleKind.MISMATCH, atol=request.atol, rtol=request.rtol)
    if has_recorded_result:
        return OracleSpec(kind=OracleKind.RECORDED, atol=request.atol, rtol=request.rtol)
    raise UsageError(
        "no oracle: what makes a candidate interesting?",
        hint="--reference cpu, --reference-python PY, --error REGEX or --script CMD "
        "(or a source with a snapshot that recorded its result)",
    )


def checked_script(script: str) -> str:
    """`--script CMD`, its program made absolute (it runs in each candidate's work folder). A missing or
    unexecutable program would exit 127 or 126 on every candidate, which `git bisect run` semantics read as
    "interesting", and reduce everything away: refused here."""
    import os
    import shlex
    import shutil

    try:
        words = shlex.split(script)
    except ValueError as exc:
        raise UsageError(f"--script {script!r}: not a command line ({exc})") from None
    if not words:
        raise UsageError("--script is empty", hint="give a command; the candidate's HLO file is its last argument")
    program, text = words[0], script.lstrip()
    if "=" in program:  # VAR=value cmd ...: the shell's business
        return script
    if os.sep in program:
        if not os.path.isfile(program):
            raise UsageError(f"--script {program}: no such file")
        if not os.access(program, os.X_OK):
            raise UsageError(f"--script {program}: not executable", hint=f"chmod +x {program}, or run it through sh")
        if text.startswith(program) and not os.path.isabs(program):
            return shlex.quote(os.path.abspath(program)) + text[len(program) :]
    elif shutil.which(program) is None:
        raise UsageError(f"--script {program}: no such command on PATH")
    return script


def _check(request: ReduceRequest) -> None:
    if not 1 <= request.jobs <= MAX_JOBS:
        raise UsageError(
            f"--jobs {request.jobs}: must be 1 to {MAX_JOBS}",
            hint="each job keeps its own target processes (a jax import each): about one per core",
        )
    if request.rechecks < 1:
        raise UsageError(f"--rechecks {request.rechecks}: must be 1 or more")
    if str(request.strategy) not in {member.value for member in ReduceStrategy}:
        raise UsageError(f"--strategy {request.strategy}: expected {choices(ReduceStrategy)}")
    for option, value in (("--timeout", request.timeout), ("--max-time", request.max_time)):
        if value is not None and not 0 < value < math.inf:  # also nan: every comparison with it is false
            raise UsageError(f"{option} {value:g}: must be a finite number of seconds, more than 0")


def plan_reduce(request: ReduceRequest, modules: list[ModuleSource], source_kind: str) -> ReducePlan:
    """The plan for reducing the one module of `modules` (pure; UsageError for bad input)."""
    _check(request)
    if len(modules) != 1:
        names = ", ".join(m.label for m in modules[:8])
        raise UsageError(
            f"{request.source} holds {len(modules)} modules; reduce takes one",
            hint=f"pick one with --module ID|NAME ({names})",
        )
    module = modules[0]
    if module.text is None and module.proto is None and module.snapshot is None:
        raise UsageError(
            f"module {module.label}: no HLO text, proto or snapshot to reduce",
            hint="dump with --preset dump:hlo (before_optimizations text)",
        )
    oracle = oracle_of(request, module.snapshot is not None)
    replay = ReplayRequest(
        source=request.source,
        python=request.python,
        references=list(request.references),
        reference_pythons=list(request.reference_pythons),
        atol=request.atol,
        rtol=request.rtol,
        xla_flags=list(request.xla_flags),
        disable_passes=list(request.disable_passes),
        platform=request.platform,
        inputs=request.inputs,
        seed=request.seed,
        timeout=request.timeout,
    )
    runs = plan_replay(replay, source_kind, [module]).runs
    reference = runs[1] if oracle.kind == OracleKind.MISMATCH else None
    stem = request.name or module.name or "module"
    return ReducePlan(request, module, oracle, runs[0], reference, f"reduce-{stem}")
