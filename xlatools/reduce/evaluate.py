"""Candidates in, verdicts out: parse check by the target's HLO parser, cache, oracle runs on --jobs slots.

Every candidate is printed, fingerprinted (canonical HLO plus where its inputs come
from) and looked up in the cache; new ones are parsed by the target jaxlib in one
batch; those that parse run the oracle, several at once. Each slot has its own test
worker (and reference worker), so `--jobs N` runs N candidates side by side.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue
from typing import TYPE_CHECKING

from xlatools.records.reduce import Counters, RecordedValue, Verdict
from xlatools.reduce.edits import Candidate
from xlatools.reduce.hlo_text import print_module
from xlatools.reduce.oracle import judge_crash, judge_error, judge_outputs, run_script
from xlatools.reduce.plan import ReducePlan
from xlatools.replay.workers import Worker, make_worker, stop_all
from xlatools.vocab import Interest, OracleKind, PrecisionMode, ReplayOutcome

if TYPE_CHECKING:
    from xlatools.replay.jobs import Materials


@dataclass
class Values:
    """Where values live: the original arguments and instructions' recorded values."""

    arguments: Path | None = None
    recorded: dict[str, RecordedValue] = field(default_factory=dict)
    expected: Path | None = None  # the snapshot's recorded result (recorded oracle)
    expected_layouts: list[list[int]] = field(default_factory=list)
    compile_options: dict[str, str] = field(default_factory=dict)  # the run's non-default debug options

    def source(self, name: str) -> tuple[str, int]:
        kind, _, rest = name.partition(":")
        if kind == "arg":
            return str(self.arguments), int(rest)
        value = self.recorded[rest]
        return value.path, value.index


class OutOfTime(Exception):
    """--max-time ran out during the search: the batch being judged is dropped (none of its verdicts is kept)."""


def candidate_key(cand: Candidate) -> str:
    from xlatools.run.hlo_canon import fingerprint

    text = print_module(cand.module, metadata=False)
    extra = "|".join(cand.input_sources()) + "|" + ",".join(str(o) for o in cand.outputs)
    return hashlib.sha256(f"{fingerprint(text)}|{extra}".encode()).hexdigest()


class Evaluator:
    def __init__(self, plan: ReducePlan, work: Path, caller_env: dict[str, str], gpu_platform: str):
        self.plan, self.work = plan, work
        slots = plan.request.jobs
        self.tests = [make_worker(plan.test, caller_env, gpu_platform, work / "workers", s) for s in range(slots)]
        self.references = (
            [make_worker(plan.reference, caller_env, gpu_platform, work / "workers", s) for s in range(slots)]
            if plan.reference
            else []
        )
        self.caller_env = caller_env
        self.values = Values()
        self.deadline: float | None = None  # time.monotonic() at which the search stops (--max-time); None: none
        self.cache: dict[str, Verdict] = {}
        self.counters = Counters()
        self.skipped: list[str] = []  # why the oracle could not judge a candidate, one line each (this invocation)
        self._next = 0
        self._lock = threading.Lock()
        self._slots: Queue[int] = Queue()
        for slot in range(slots):
            self._slots.put(slot)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def timeout(self) -> float | None:
        """One replay's or script's limit: --timeout, and during the search what is left of --max-time (a call
        the deadline cuts is stopped; evaluate() then drops its batch)."""
        limit = self.plan.request.timeout
        if self.deadline is None:
            return limit
        left = max(0.01, self.deadline - time.monotonic())
        return left if limit is None else min(limit, left)

    def close(self) -> None:
        stop_all(self.tests + self.references)

    def folder(self) -> Path:
        with self._lock:
            self._next += 1
            return self.work / "candidates" / f"c{self._next:05d}"

    def write(self, cand: Candidate, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "candidate.hlo.txt"
        path.write_text(print_module(cand.module))
        return path

    def evaluate(self, cands: list[Candidate]) -> list[Verdict]:
        """Verdicts in the order of `cands` (cached ones without running anything). Past the deadline: OutOfTime,
        and nothing of this batch is cached (a verdict cut short by the deadline is no verdict)."""
        if self.out_of_time():
            raise OutOfTime
        self.counters.candidates += len(cands)
        verdicts: list[Verdict | None] = [None] * len(cands)
        keys = [candidate_key(c) for c in cands]
        todo: list[tuple[int, Path]] = []
        for index, key in enumerate(keys):
            if key in self.cache:
                self.counters.cache_hits += 1
                verdicts[index] = self.cache[key]
            elif key not in [keys[i] for i, _ in todo]:
                todo.append((index, self.write(cands[index], self.folder())))
        runnable = self._parsed(todo, verdicts)
        if runnable:
            self.counters.oracle_calls += len(runnable)
            results = self._in_slots(lambda item: self._on_slot(cands[item[0]], item[1]), runnable)
            if self.out_of_time():
                raise OutOfTime
            for (index, path), verdict in zip(runnable, results):
                verdicts[index] = verdict
                if verdict.interest == Interest.SKIP:
                    self.skipped.append(verdict.reason[:300])
                if not verdict.interesting:
                    shutil.rmtree(path.parent, ignore_errors=True)
        out = []
        for index, key in enumerate(keys):
            verdict = verdicts[index] or self.cache[key]  # None: a duplicate of an earlier candidate in this batch
            self.cache[key] = verdict
            out.append(verdict)
        return out

    def _in_slots(self, work, items: list) -> list:
        """`work` over `items`, --jobs at a time. Ctrl-C and SIGTERM reach the main thread only, while the slots'
        scripts and workers run in sessions of their own: they are stopped here, or the pool would wait for them."""
        from xlatools.replay.workers import stop_all
        from xlatools.run.process import stopping_runs

        pool = ThreadPoolExecutor(max_workers=self.plan.request.jobs)
        try:
            return list(pool.map(work, items))
        except BaseException:
            with stopping_runs():  # a slot that starts its script now is stopped too
                stop_all(self.tests + self.references, retire=True)
                pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _parsed(self, todo: list[tuple[int, Path]], verdicts: list[Verdict | None]) -> list[tuple[int, Path]]:
        """The candidates the target's HLO parser accepts; the others get their verdict here."""
        answers = self.tests[0].parse([path for _, path in todo]) if todo else []
        runnable = []
        for (index, path), answer in zip(todo, answers):
            if answer.ok:
                runnable.append((index, path))
            else:
                self.counters.unparsable += 1
                verdicts[index] = Verdict(
                    interest=Interest.NOT_INTERESTING,
                    reason=f"the target's HLO parser refuses it: {answer.error[:300]}",
                )
                shutil.rmtree(path.parent, ignore_errors=True)
        return runnable

    def _on_slot(self, cand: Candidate, path: Path) -> Verdict:
        slot = self._slots.get()
        try:
            verdict = self.run_oracle(slot, cand, path)
            verdict.dir = str(path.parent)
            return verdict
        finally:
            self._slots.put(slot)

    def compose_inputs(self, worker: Worker, cand: Candidate, out: Path) -> Path:
        """The candidate's arguments, picked from the original ones and the recorded values (the state's files)."""
        from xlatools.replay.workers import WorkerRefused

        try:
            return worker.compose([self.values.source(s) for s in cand.input_sources()], out)
        except (WorkerRefused, KeyError, ValueError, IndexError) as exc:  # a state that names what is not there
            from xlatools.errors import UsageError

            state = self.work.parent / "state.json"
            raise UsageError(
                f"{state}: the reduce state names arguments or values that cannot be read ({exc})",
                hint=f"remove {state.parent} (or run with --fresh) to start this reduction over",
            ) from None

    def run_oracle(self, slot: int, cand: Candidate, path: Path, literals: bool = False) -> Verdict:
        from xlatools.replay.jobs import Materials, job_spec
        from xlatools.replay.plan import ReplayRequest
        from xlatools.replay.precision import mode_of

        folder, spec, timeout = path.parent, self.plan.oracle, self.timeout()
        test_worker = self.tests[slot]
        inputs = self.compose_inputs(test_worker, cand, folder / "inputs.npz")
        if spec.kind == OracleKind.SCRIPT:
            env = {**self.caller_env, "JAX_ENABLE_X64": "1"}
            return run_script(spec, path, inputs, folder, env, timeout)
        request = ReplayRequest(
            source=path,
            python=self.plan.test.python,
            inputs=str(inputs),
            atol=spec.atol,
            rtol=spec.rtol,
            print_literals=literals,
        )
        mode = mode_of(self.plan.request.precision)
        materials = Materials({"kind": "text", "path": str(path)}, compile_options=dict(self.values.compile_options))
        tested = materials if mode != PrecisionMode.HIGHEST else self._raised(path)  # the reference's never is
        job = job_spec(request, tested, self.plan.test, folder / "test", None)
        if spec.kind == OracleKind.RECORDED:
            expected = self.expected_for(test_worker, cand, folder / "expected.npz")
            job["expected"].append({"label": "recorded", "path": str(expected)})
        test = test_worker.replay(job, folder / "test", timeout)
        if spec.kind == OracleKind.ERROR:
            return judge_error(spec, test)
        if spec.kind == OracleKind.CRASH:
            return judge_crash(spec, test)
        reference = None
        if spec.kind == OracleKind.MISMATCH and not test.failure:
            ref_spec = job_spec(request, materials, self.plan.reference, folder / "reference", folder / "test")
            reference = self.references[slot].replay(ref_spec, folder / "reference", timeout)
        verdict = judge_outputs(spec, test, reference)
        if spec.kind == OracleKind.MISMATCH and verdict.interesting and mode == PrecisionMode.AUTO:
            return self._at_full_precision(slot, request, path, verdict, reference)
        return verdict

    def _raised(self, path: Path) -> Materials:
        """The candidate with its dots and convolutions at full precision (replay/precision.py)."""
        from xlatools.replay.jobs import Materials
        from xlatools.replay.precision import raise_precision

        raised = path.with_name("candidate.highest.hlo.txt")
        raised.write_text(raise_precision(path.read_text())[0])
        return Materials({"kind": "text", "path": str(raised)})

    def _at_full_precision(self, slot: int, request, path: Path, verdict: Verdict, reference) -> Verdict:
        """A candidate that differs as compiled, run again at full precision against the reference's outputs: a
        difference that is only precision (TF32 on a GPU) is not interesting unless --precision as-compiled."""
        from xlatools.replay.jobs import job_spec
        from xlatools.replay.precision import classify, reduced

        folder = path.parent
        outputs = folder / "reference" / "outputs.npz"
        if not reduced(path.read_text()) or not outputs.is_file():
            return verdict
        job = job_spec(
            request,
            self._raised(path),
            self.plan.test,
            folder / "test-highest",
            None,
            [{"label": "reference", "path": str(outputs)}],
        )
        again = self.tests[slot].replay(job, folder / "test-highest", self.timeout())
        outcome, why = classify(reference.comparisons, again)
        if outcome == ReplayOutcome.PRECISION:
            return Verdict(
                interest=Interest.NOT_INTERESTING, reason=f"precision only: {why}", comparison=verdict.comparison
            )
        return Verdict(interest=verdict.interest, reason=f"{verdict.reason}; {why}", comparison=verdict.comparison)

    def expected_for(self, worker: Worker, cand: Candidate, out: Path) -> Path:
        expected = str(self.values.expected)
        return worker.compose(
            [(expected, origin) for origin in cand.outputs], out, layouts={expected: self.values.expected_layouts}
        )
