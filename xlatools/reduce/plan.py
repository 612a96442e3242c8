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

import re
from dataclasses import dataclass

from xlatools.errors import UsageError
from xlatools.records.reduce import OracleSpec, ReducePlanRecord, ReduceRequest
from xlatools.records.replay import PlannedModule, PlannedRun
from xlatools.replay.plan import ReplayRequest, RunConfig, plan_replay
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import OracleKind, ReduceStrategy, choices

__all__ = ["OracleSpec", "ReducePlan", "ReduceRequest", "oracle_of", "plan_reduce"]


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
        return ReducePlanRecord(request=self.request, module=module, oracle=self.oracle, describe=self.oracle.describe(),
                                test=_planned(self.test), reference=_planned(self.reference) if self.reference else None,
                                name=self.name)


def _planned(run: RunConfig) -> PlannedRun:
    return PlannedRun(label=run.label, role=run.role, python=run.python, platform=run.platform,
                      xla_flags=list(run.xla_flags), flag_sources=dict(run.flag_sources))


def oracle_of(request: ReduceRequest, has_recorded_result: bool) -> OracleSpec:
    chosen = [bool(request.references or request.reference_pythons), bool(request.error), bool(request.script)]
    if sum(chosen) > 1:
        raise UsageError("give one oracle: --reference/--reference-python, --error or --script")
    if request.error:
        try:
            re.compile(request.error)
        except re.error as exc:
            raise UsageError(f"--error {request.error!r}: not a regular expression ({exc})") from None
        return OracleSpec(kind=OracleKind.ERROR, error_regex=request.error)
    if request.script:
        return OracleSpec(kind=OracleKind.SCRIPT, script=request.script)
    if len(request.references) + len(request.reference_pythons) > 1:
        raise UsageError("reduce compares with one reference: give --reference cpu or one --reference-python")
    if chosen[0]:
        return OracleSpec(kind=OracleKind.MISMATCH, atol=request.atol, rtol=request.rtol)
    if has_recorded_result:
        return OracleSpec(kind=OracleKind.RECORDED, atol=request.atol, rtol=request.rtol)
    raise UsageError("no oracle: what makes a candidate interesting?",
                     hint="--reference cpu, --reference-python PY, --error REGEX or --script CMD "
                          "(or a source with a snapshot that recorded its result)")


def _check(request: ReduceRequest) -> None:
    if request.jobs < 1:
        raise UsageError(f"--jobs {request.jobs}: must be 1 or more")
    if request.rechecks < 1:
        raise UsageError(f"--rechecks {request.rechecks}: must be 1 or more")
    if str(request.strategy) not in {member.value for member in ReduceStrategy}:
        raise UsageError(f"--strategy {request.strategy}: expected {choices(ReduceStrategy)}")
    for option, value in (("--timeout", request.timeout), ("--max-time", request.max_time)):
        if value is not None and value <= 0:
            raise UsageError(f"{option} {value:g}: must be more than 0 seconds")


def plan_reduce(request: ReduceRequest, modules: list[ModuleSource], source_kind: str) -> ReducePlan:
    """The plan for reducing the one module of `modules` (pure; UsageError for bad input)."""
    _check(request)
    if len(modules) != 1:
        names = ", ".join(m.label for m in modules[:8])
        raise UsageError(f"{request.source} holds {len(modules)} modules; reduce takes one",
                         hint=f"pick one with --module ID|NAME ({names})")
    module = modules[0]
    if module.text is None and module.proto is None and module.snapshot is None:
        raise UsageError(f"module {module.label}: no HLO text, proto or snapshot to reduce",
                         hint="dump with --preset dump:hlo (before_optimizations text)")
    oracle = oracle_of(request, module.snapshot is not None)
    replay = ReplayRequest(source=request.source, python=request.python, references=list(request.references),
                           reference_pythons=list(request.reference_pythons), atol=request.atol, rtol=request.rtol,
                           xla_flags=list(request.xla_flags), disable_passes=list(request.disable_passes),
                           platform=request.platform, inputs=request.inputs, seed=request.seed, timeout=request.timeout)
    runs = plan_replay(replay, source_kind, [module]).runs
    reference = runs[1] if oracle.kind == OracleKind.MISMATCH else None
    stem = request.name or module.name or "module"
    return ReducePlan(request, module, oracle, runs[0], reference, f"reduce-{stem}")
