"""`xlatools reduce`, end to end: request -> checked plan -> input check -> reduction -> re-checks.

prepare() resolves the module and probes every interpreter and flag before anything runs.
Reduction.start() replays the source once as `xlatools replay` would (its module text as the
target printed it, its arguments) and checks that the oracle holds for it (else exit 2, saying
why, leaving nothing behind); only then does output.py open the reduce bundle and run() reduce,
re-check the result several times (flaky: exit 1) and hand back the Outcome it writes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from xlatools.errors import EnvironmentMissing, UsageError, XlaToolsError
from xlatools.records.reduce import Counters, RanWith, ReduceEnd, ReduceRequest, Round, Verdict
from xlatools.reduce import edits
from xlatools.reduce.edits import Candidate
from xlatools.reduce.evaluate import Evaluator
from xlatools.reduce.plan import ReducePlan, plan_reduce
from xlatools.reduce.state import StateStore
from xlatools.run.target import ProbedInterpreter
from xlatools.vocab import Platform

if TYPE_CHECKING:
    from xlatools.console import Reporter


@dataclass
class PreparedReduce:
    plan: ReducePlan
    targets: dict[str, ProbedInterpreter]


@dataclass
class Outcome:
    """What a reduction found (the bundle writer's input)."""

    plan: ReducePlan
    original: Candidate
    best: Candidate
    rechecks: list[Verdict]
    recheck_dir: Path  # the last re-check's folder: its inputs, outputs and literals
    rounds: list[Round]
    counters: Counters
    seconds: float
    stopped: str | None  # "max-time" when the budget ran out
    ended: ReduceEnd  # why it stopped there, and what would take it further
    test: RanWith
    reference: RanWith | None
    state_folder: Path

    @property
    def flaky(self) -> bool:
        return any(v.interesting is not True for v in self.rechecks)


def prepare(request: ReduceRequest, unpack_into: Path | None = None) -> PreparedReduce:
    """The plan, with its interpreters probed. A repro pack as the source is unpacked under `unpack_into`
    (reduce/pack_source.py), its settings taken under the request's."""
    from xlatools.reduce.pack_source import is_pack, open_pack
    from xlatools.replay.execute import check_flags
    from xlatools.replay.plan import label_references
    from xlatools.replay.sources import resolve
    from xlatools.run import target as targets

    if is_pack(request.source):
        if unpack_into is None:
            raise UsageError(
                f"{request.source}: a repro pack cannot be reduced here", hint="reduce it with `xlatools reduce`"
            )
        request, modules = open_pack(request, unpack_into)
        kind = "pack"
    else:
        kind, modules = resolve(
            request.source, [request.module] if request.module else [], include_all=bool(request.module)
        )
    plan = plan_reduce(request, modules, kind)
    found: dict[str, ProbedInterpreter] = {}
    for run in [plan.test] + ([plan.reference] if plan.reference else []):
        platform = Platform.AUTO if run.platform == Platform.GPU else run.platform
        target = found.get(run.python) or targets.probe(run.python, platform)
        found[run.python] = target
        if run.platform == Platform.GPU and not target.has_gpu:
            raise EnvironmentMissing(
                f"--platform gpu: {run.python} sees no GPU (jax backend: {target.backend or 'none'})"
            )
        check_flags(target, run.xla_flags, run.flag_sources)
    label_references(
        [plan.test, *([plan.reference] if plan.reference else [])], {p: t.jax for p, t in found.items() if t.jax}
    )
    return PreparedReduce(plan, found)


def _original(plan: ReducePlan, evaluator: Evaluator, folder: Path) -> tuple[str, int]:
    """Replay the source once, as replay would: (its module text as the target printed it, its output count)."""
    from xlatools.replay.jobs import job_spec, prepare_materials
    from xlatools.replay.plan import ReplayRequest
    from xlatools.vocab import ReplayOutcome, SourceForm

    request = plan.request
    materials = prepare_materials(plan.module, SourceForm.AUTO, folder, literals=request.inputs is None, hlo_first=True)
    replay = ReplayRequest(
        source=request.source,
        python=request.python,
        inputs=request.inputs,
        seed=request.seed,
        atol=request.atol,
        rtol=request.rtol,
    )
    spec = job_spec(replay, materials, plan.test, folder / "test", None)
    record = evaluator.tests[0].replay(spec, folder / "test", request.timeout)
    if record.failure == ReplayOutcome.INPUT_ERROR:
        raise UsageError(f"the inputs do not fit module {plan.module.label}: {record.message}")
    if not (folder / "test" / "module.txt").is_file() or not (folder / "test" / "inputs.npz").is_file():
        if record.failure in (ReplayOutcome.TIMEOUT, ReplayOutcome.INTERRUPTED):
            raise EnvironmentMissing(
                f"{plan.test.python} cannot load module {plan.module.label}: {record.message}",
                hint="replay it first: xlatools replay SOURCE",
            )
        # the interpreter was probed and runs jax: a module its parser refuses (or dies on) is the input's fault
        files = ", ".join(str(path) for path in plan.module.files().values()) or str(request.source)
        raise UsageError(
            f"{files}: {plan.test.python} cannot load module {plan.module.label}: {record.message}",
            hint="reduce needs a module the target's HLO parser reads; check it with `xlatools replay`",
        )
    evaluator.values.arguments = folder / "test" / "inputs.npz"
    evaluator.values.compile_options = dict(materials.compile_options)
    if materials.snapshot_result:
        evaluator.values.expected = Path(materials.snapshot_result.path)
        evaluator.values.expected_layouts = materials.snapshot_result.minor_to_major
    return (folder / "test" / "module.txt").read_text(), len(record.outputs)


def original_candidate(plan: ReducePlan, evaluator: Evaluator, folder: Path) -> Candidate:
    from xlatools.reduce.hlo_text import HloSyntaxError, parse_module

    text, outputs = _original(plan, evaluator, folder)
    try:
        return edits.initial(parse_module(text), outputs)
    except HloSyntaxError as exc:
        raise UsageError(f"module {plan.module.label}: cannot read its HLO text ({exc})") from None


def recheck(evaluator: Evaluator, best: Candidate, times: int, folder: Path) -> list[Verdict]:
    """Run the oracle on the result `times` more times, caches bypassed (a flaky oracle shows here)."""
    verdicts = []
    for attempt in range(times):
        path = evaluator.write(best, folder / f"recheck-{attempt + 1}")
        verdicts.append(evaluator.run_oracle(0, best, path, literals=attempt == times - 1))
    return verdicts


def _ran_with(folder: Path, run, target: ProbedInterpreter | None = None) -> RanWith:
    """The interpreter the last re-check ran in, as it reported itself; where it reported nothing (a check script
    is the oracle: no replay ran), as xlatools probed it before the reduction."""
    from xlatools.replay.jobs import read_answer

    record = read_answer(folder, run)
    if record and record.versions:
        return RanWith(versions=record.versions, device=record.device)
    if target is None:
        return RanWith()
    return RanWith(versions=target.facts(), device=target.devices[0] if target.devices else None)


def _state_identity(plan: ReducePlan) -> object:
    from xlatools.records import to_json

    record = to_json(plan.record())
    request = record["request"]
    return {
        "module": record["module"]["files"],
        "oracle": record["oracle"],
        "test": record["test"],
        "reference": record["reference"],
        "inputs": request["inputs"],
        "seed": request["seed"],
        "strategy": request["strategy"],
    }


@dataclass
class Reduction:
    """A reduction whose input was checked: the saved or original best, and the workers that run candidates."""

    prepared: PreparedReduce
    evaluator: Evaluator
    store: StateStore
    original: Candidate
    best: Candidate
    verdict: Verdict
    reporter: Reporter
    started: float

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        prepared: PreparedReduce,
        out_root: Path,
        reporter: Reporter,
        fresh: bool = False,
        caller_env: dict[str, str] | None = None,
    ) -> Iterator["Reduction"]:
        """Check the oracle on the input (or resume from the saved state); the workers stop on the way out.
        A refused input (UsageError) leaves no state behind."""
        plan, started = prepared.plan, time.monotonic()
        store = StateStore.open(out_root, plan.name, _state_identity(plan), fresh)
        ours = not store.resumed  # a state this command began: nothing earlier is lost with it
        gpu = prepared.targets[plan.test.python].gpu_platform()
        evaluator = Evaluator(plan, store.work, dict(os.environ if caller_env is None else caller_env), gpu)
        try:
            try:
                original = original_candidate(plan, evaluator, store.folder / "source")
                best, verdict = cls._first(plan, evaluator, store, original, reporter)
            except (UsageError, EnvironmentMissing, OSError) as exc:
                if ours:  # a refused input (or one xlatools cannot reduce) leaves nothing behind
                    shutil.rmtree(store.folder, ignore_errors=True)
                    _remove_if_empty(store.folder.parent)
                if isinstance(exc, OSError):  # a full disk, the state folder gone from under us: not our bug
                    from xlatools.fsutil import write_failure

                    raise write_failure(
                        exc, f"cannot write the reduce state in {store.folder}: {exc.strerror}"
                    ) from None
                raise
            try:
                yield cls(prepared, evaluator, store, original, best, verdict, reporter, started)
            except BaseException as exc:
                if _disk_full(exc) and ours:  # its work files are what the disk lacks room for
                    shutil.rmtree(store.folder, ignore_errors=True)
                    _remove_if_empty(store.folder.parent)
                raise
        finally:
            evaluator.close()

    @staticmethod
    def _first(
        plan: ReducePlan, evaluator: Evaluator, store: StateStore, original: Candidate, reporter: Reporter
    ) -> tuple[Candidate, Verdict]:
        restored = store.restore(evaluator)
        if restored:
            reporter.step(f"resuming from {store.folder} ({restored[0].module.instruction_count()} instructions)")
            return restored
        reporter.step(
            f"checking the oracle on the input ({original.module.instruction_count()} instructions): "
            f"{plan.oracle.describe()}"
        )
        verdict = evaluator.evaluate([original])[0]
        if verdict.interesting is not True:
            from xlatools.reduce.agreement import refuse_lost_difference

            refuse_lost_difference(plan, evaluator, original, store.folder / "source", verdict)
            raise UsageError(
                f"the input is not interesting, nothing to reduce: {verdict.reason}",
                hint="check the oracle: `xlatools replay` the module with the same reference, flags and inputs",
            )
        reporter.info(f"input: {verdict.reason}")
        store.save_best(original, verdict, evaluator)
        return original, verdict

    def run(self) -> Outcome:
        """Reduce, then re-check the result (the dead code removed) --rechecks times."""
        import secrets

        from xlatools.reduce.reducer import Reducer
        from xlatools.reduce.strategies import phases_for

        plan, request = self.prepared.plan, self.prepared.plan.request
        deadline = self.started + request.max_time if request.max_time else None
        reducer = Reducer(self.evaluator, self.best, self.verdict, self.store, self.reporter, deadline)
        reducer.rounds = list(self.store.state.rounds)
        phases = phases_for(request.strategy, plan.oracle.kind)
        reducer.run(phases)
        best = reducer.best
        final = edits.dce(Candidate(best.module, dict(best.inputs), list(best.outputs), best.note))
        self.reporter.step(f"re-checking the result {request.rechecks} time(s)")
        folder = self.store.folder / f"final-{secrets.token_hex(4)}"
        rechecks = recheck(self.evaluator, final, request.rechecks, folder)
        last = folder / f"recheck-{request.rechecks}"
        return Outcome(
            plan,
            self.original,
            final,
            rechecks,
            last,
            list(reducer.rounds),
            self.evaluator.counters,
            round(time.monotonic() - self.started, 3),
            "max-time" if reducer.out_of_time() else None,
            reducer.ended(phases, plan.oracle.kind),
            _ran_with(last / "test", plan.test, self.prepared.targets.get(plan.test.python)),
            _ran_with(last / "reference", plan.reference, self.prepared.targets.get(plan.reference.python))
            if plan.reference
            else None,
            self.store.folder,
        )


def _disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(exc, XlaToolsError) and exc.disk_full


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
