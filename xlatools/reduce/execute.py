"""`xlatools reduce`, end to end: request -> checked plan -> input check -> reduction -> re-checks -> bundle.

prepare() resolves the module and probes every interpreter and flag before anything runs.
run_reduction() replays the source once as `xlatools replay` would (its module text as the
target printed it, its arguments), checks that the oracle holds for it (else exit 2, saying
why), reduces, re-checks the result several times (flaky: exit 1) and returns the outcome;
bundle.py writes the reduce bundle from it.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.reduce import edits
from xlatools.reduce.edits import Candidate
from xlatools.reduce.evaluate import Evaluator
from xlatools.reduce.oracle import Verdict
from xlatools.reduce.plan import ReducePlan, ReduceRequest, plan_reduce
from xlatools.reduce.state import StateStore
from xlatools.run.target import Target

Progress = Callable[[str], None]


@dataclass
class Prepared:
    plan: ReducePlan
    targets: dict[str, Target]


@dataclass
class Outcome:
    """What a reduction found (the bundle writer's input)."""

    plan: ReducePlan
    original: Candidate
    best: Candidate
    verdict: Verdict
    rechecks: list[Verdict]
    recheck_dir: Path
    rounds: list[dict[str, Any]]
    counters: dict[str, int]
    seconds: float
    stopped: str | None  # "max-time" when the budget ran out
    versions: dict[str, Any] = field(default_factory=dict)  # run label -> versions
    state_folder: Path | None = None

    @property
    def flaky(self) -> bool:
        return any(v.interesting is not True for v in self.rechecks)


def prepare(request: ReduceRequest) -> Prepared:
    from xlatools.replay.execute import check_flags
    from xlatools.replay.sources import resolve
    from xlatools.run import target as targets

    kind, modules = resolve(request.source, [request.module] if request.module else [], include_all=bool(request.module))
    plan = plan_reduce(request, modules, kind)
    found: dict[str, Target] = {}
    for run in [plan.test] + ([plan.reference] if plan.reference else []):
        target = found.get(run.python) or targets.probe(run.python, "auto" if run.platform == "gpu" else run.platform)
        found[run.python] = target
        if run.platform == "gpu" and not target.has_gpu:
            raise EnvironmentMissing(f"--platform gpu: {run.python} sees no GPU (jax backend: {target.backend or 'none'})")
        check_flags(target, run.xla_flags, run.flag_sources)
    return Prepared(plan, found)


def _original(plan: ReducePlan, evaluator: Evaluator, folder: Path) -> tuple[str, int]:
    """Replay the source once, as replay would: (its module text as the target printed it, its output count)."""
    from xlatools.replay.jobs import job_spec, prepare_materials
    from xlatools.replay.plan import ReplayRequest

    request = plan.request
    materials = prepare_materials(plan.module, "auto", folder, literals=request.inputs is None)
    replay = ReplayRequest(source=request.source, python=request.python, inputs=request.inputs, seed=request.seed,
                           atol=request.atol, rtol=request.rtol)
    spec = job_spec(replay, materials, plan.test, folder / "test", None)
    record = evaluator.tests[0].replay(spec, folder / "test", request.timeout)
    if record.failure == "input-error":
        raise UsageError(f"the inputs do not fit module {plan.module.label}: {record.message}")
    if not (folder / "test" / "module.txt").is_file() or not (folder / "test" / "inputs.npz").is_file():
        raise EnvironmentMissing(f"{plan.test.python} cannot load module {plan.module.label}: {record.message}",
                                 hint="replay it first: xlatools replay SOURCE")
    evaluator.values.arguments = folder / "test" / "inputs.npz"
    if materials.snapshot_result:
        evaluator.values.expected = Path(materials.snapshot_result["path"])
        evaluator.values.expected_layouts = materials.snapshot_result["minor_to_major"]
    return (folder / "test" / "module.txt").read_text(), len(record.outputs)


def _start(plan: ReducePlan, evaluator: Evaluator, store: StateStore, progress: Progress) -> tuple[Candidate, Candidate, Verdict]:
    """(original, best so far, its verdict): from the saved state, or checked afresh on the input."""
    from xlatools.reduce.hlo_text import HloSyntaxError, parse_module

    text, outputs = _original(plan, evaluator, store.folder / "source")
    try:
        module = parse_module(text)
    except HloSyntaxError as exc:
        raise UsageError(f"module {plan.module.label}: cannot read its HLO text ({exc})") from None
    original = edits.initial(module, outputs)
    restored = store.restore(evaluator)
    if restored:
        progress(f"resuming from {store.folder} ({restored[0].module.instruction_count()} instructions)")
        return original, restored[0], restored[1]
    progress(f"checking the oracle on the input ({module.instruction_count()} instructions): {plan.oracle.describe()}")
    verdict = evaluator.evaluate([original])[0]
    if verdict.interesting is not True:
        raise UsageError(f"the input is not interesting, nothing to reduce: {verdict.reason}",
                         hint="check the oracle: `xlatools replay` the module with the same reference, flags and inputs")
    progress(f"input: {verdict.reason}")
    store.save_best(original, verdict, None, evaluator)
    return original, original, verdict


def recheck(evaluator: Evaluator, best: Candidate, times: int, folder: Path) -> list[Verdict]:
    """Run the oracle on the result `times` more times, caches bypassed (a flaky oracle shows here)."""
    verdicts = []
    for attempt in range(times):
        path = evaluator.write(best, folder / f"recheck-{attempt + 1}")
        verdicts.append(evaluator.run_oracle(0, best, path, literals=attempt == times - 1))
    return verdicts


def run_reduction(prepared: Prepared, out_root: Path, progress: Progress, fresh: bool = False,
                  caller_env: dict[str, str] | None = None) -> Outcome:
    from xlatools.reduce.reducer import Reducer
    from xlatools.reduce.strategies import phases_for
    import secrets

    plan = prepared.plan
    request = plan.request
    t0 = time.monotonic()
    spec = {"module": plan.module.files(), "oracle": plan.to_json()["oracle"], "test": plan.to_json()["test"],
            "reference": plan.to_json()["reference"], "inputs": request.inputs, "seed": request.seed,
            "strategy": request.strategy}
    store = StateStore.open(out_root, plan.name, spec, fresh)
    gpu = prepared.targets[plan.test.python].gpu_platform()
    evaluator = Evaluator(plan, store.work, dict(os.environ if caller_env is None else caller_env), gpu)
    try:
        try:
            original, best, verdict = _start(plan, evaluator, store, progress)
        except UsageError:
            if not store.resumed:  # a refused input leaves nothing behind
                evaluator.close()
                shutil.rmtree(store.folder, ignore_errors=True)
                _remove_if_empty(store.folder.parent)
            raise
        deadline = t0 + request.max_time if request.max_time else None
        reducer = Reducer(evaluator, best, verdict, store, progress, deadline)
        reducer.run(phases_for(request.strategy, plan.oracle.kind))
        stopped = "max-time" if reducer.out_of_time() else None
        best = reducer.best
        final = edits.dce(Candidate(best.module, dict(best.inputs), list(best.outputs), best.note))
        progress(f"re-checking the result {request.rechecks} time(s)")
        folder = store.folder / f"final-{secrets.token_hex(4)}"
        rechecks = recheck(evaluator, final, request.rechecks, folder)
        versions = _versions(folder / f"recheck-{request.rechecks}")
        return Outcome(plan, original, final, reducer.best_verdict, rechecks, folder / f"recheck-{request.rechecks}",
                       [r.to_json() for r in reducer.rounds], evaluator.counters.to_json(),
                       round(time.monotonic() - t0, 3), stopped, versions, store.folder)
    finally:
        evaluator.close()


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _versions(folder: Path) -> dict[str, Any]:
    import json

    out = {}
    for label in ("test", "reference"):
        try:
            data = json.loads((folder / label / "result.json").read_text())
        except (OSError, ValueError):
            continue
        out[label] = {"versions": data.get("versions"), "device": data.get("device")}
    return out


def run_isolation(prepared: Prepared, folder: Path, progress: Progress, caller_env: dict[str, str] | None = None):
    """`replay --isolate`: every instruction of the module alone against the reference (see isolate.py)."""
    from xlatools.reduce.hlo_text import parse_module
    from xlatools.reduce.isolate import isolate

    plan = prepared.plan
    if plan.oracle.kind != "mismatch":
        raise UsageError("--isolate compares with a reference: add --reference cpu or --reference-python PY")
    store = StateStore.open(folder, "isolate", {"module": plan.module.files()}, fresh=True)
    gpu = prepared.targets[plan.test.python].gpu_platform()
    evaluator = Evaluator(plan, store.work, dict(os.environ if caller_env is None else caller_env), gpu)
    try:
        text, outputs = _original(plan, evaluator, store.folder / "source")
        start = edits.initial(parse_module(text), outputs)
        return isolate(plan, evaluator, start, lambda c, names: store.record_values(evaluator, c, names), progress)
    finally:
        evaluator.close()
