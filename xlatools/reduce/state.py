"""The resumable state of one reduction: `<out>/.reduce-state/<module>-<key>/`.

The key comes from what was asked (module text, oracle, interpreters, flags, inputs), so
running the same command again finds the folder and continues from the best candidate
with every verdict cached; `--fresh` starts over. A damaged state file is bad input
(exit 2, naming the file and key) rather than silently forgotten work. The folder holds state.json (written
atomically after every improvement and round), the original arguments and the recorded
values (.npz), and the work area of candidates.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.bundle import safe_name, utc_now
from xlatools.fsutil import atomic_write_json
from xlatools.records.base import to_json
from xlatools.records.reduce import STATE_SCHEMA, RecordedValue, ReduceState, SavedCandidate, Verdict
from xlatools.reduce.edits import Candidate
from xlatools.reduce.hlo_text import HloSyntaxError, parse_module, print_module

if TYPE_CHECKING:
    from xlatools.reduce.evaluate import Evaluator
    from xlatools.reduce.reducer import Reducer

STATE_FILE = "state.json"


def state_key(identity: object) -> str:
    """What identifies a reduction (JSON-ready data): the same command finds its folder again."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _load(path: Path, key: str) -> ReduceState:
    from xlatools.errors import UsageError
    from xlatools.records.base import read_record

    fix = f"remove {path.parent} (or run with --fresh) to start this reduction over"
    state = read_record(path, ReduceState, "reduce state file", hint=fix)
    if state.schema != STATE_SCHEMA or state.key != key:
        raise UsageError(
            f"{path}: a reduce state file of another reduction (schema {state.schema!r}, key {state.key!r})", hint=fix
        )
    return state


@dataclass
class StateStore:
    folder: Path
    state: ReduceState

    @classmethod
    def open(cls, out_root: Path, name: str, identity: object, fresh: bool) -> "StateStore":
        key = state_key(identity)
        from xlatools.fsutil import check_output, make_dir

        folder = Path(os.path.abspath(out_root)) / ".reduce-state" / f"{safe_name(name)}-{key}"
        if fresh and folder.exists():
            shutil.rmtree(folder)
        make_dir(folder, "--out")
        path = folder / STATE_FILE
        state = _load(path, key) if os.path.lexists(path) else ReduceState(key=key)
        check_output(path, "--out")  # saved after every improvement: refuse now what could not be saved then
        return cls(folder, state)

    @property
    def resumed(self) -> bool:
        return self.state.best is not None

    @property
    def work(self) -> Path:
        return self.folder / "work"

    @property
    def splats(self) -> dict[str, str | None]:
        return self.state.splats

    def save(self) -> None:
        self.state.saved = utc_now()
        atomic_write_json(self.folder / STATE_FILE, to_json(self.state))

    def restore(self, evaluator: "Evaluator") -> tuple[Candidate, Verdict] | None:
        """The saved best candidate and the evaluator's cache and values, when the state has them."""
        best = self.state.best
        if best is None:
            return None
        try:
            module = parse_module(best.text)
        except HloSyntaxError:
            return None
        self._check_places()
        evaluator.cache.update(self.state.cache)
        evaluator.values.recorded.update(self.state.values)
        evaluator.counters = self.state.counters
        return Candidate(module, dict(best.inputs), list(best.outputs), "resumed"), best.verdict

    def _check_places(self) -> None:
        """Every recorded value a saved state names is a regular file of its own folder, and every argument of its
        best candidate comes from one (a damaged or hand-edited state is bad input naming the file and key)."""
        import stat

        from xlatools.errors import Problem, UsageError

        path, problems = self.folder / STATE_FILE, []
        root = os.path.realpath(self.folder) + os.sep
        for name, value in self.state.values.items():
            place = os.path.realpath(value.path)
            try:
                regular = stat.S_ISREG(os.stat(place).st_mode)
            except OSError:
                regular = False
            if not (regular and place.startswith(root)) or value.index < 0:
                problems.append(Problem(f"{value.path} [{value.index}]: no file of this state", key=f"values.{name}"))
        best = self.state.best
        for parameter, origin in (best.inputs if best else {}).items():
            kind, _, rest = origin.partition(":")
            if (kind == "arg" and not rest.isdigit()) or (kind != "arg" and rest not in self.state.values):
                problems.append(Problem(f"{origin!r}: no argument or recorded value", key=f"best.inputs.{parameter}"))
        if problems:
            raise UsageError(
                f"{path}: a damaged reduce state file",
                problems=[Problem(p.message, file=str(path), key=p.key) for p in problems[:8]],
                hint=f"remove {self.folder} (or run with --fresh) to start this reduction over",
            )

    def _keep(self, evaluator: "Evaluator") -> None:
        self.state.cache = evaluator.cache
        self.state.values = evaluator.values.recorded
        self.state.counters = evaluator.counters

    def save_best(self, cand: Candidate, verdict: Verdict, evaluator: "Evaluator") -> None:
        self.state.best = SavedCandidate(
            text=print_module(cand.module),
            inputs=dict(cand.inputs),
            outputs=list(cand.outputs),
            verdict=verdict,
            note=cand.note,
        )
        self._keep(evaluator)
        self.save()

    def save_rounds(self, reducer: "Reducer") -> None:
        self.state.rounds = list(reducer.rounds)
        self._keep(reducer.evaluator)
        self.save()

    def record_values(self, evaluator: "Evaluator", exposing: Candidate, names: list[str]) -> bool:
        """Run `exposing` (the best module with every value as an output) and remember each value's place."""
        from xlatools.replay.jobs import Materials, job_spec
        from xlatools.replay.plan import ReplayRequest

        plan = evaluator.plan
        run, workers = (plan.reference, evaluator.references) if plan.reference else (plan.test, evaluator.tests)
        values = self.folder / "values"
        folder = values / f"v{len(list(values.glob('v*'))) if values.exists() else 0:03d}"
        path = evaluator.write(exposing, folder)
        inputs = evaluator.compose_inputs(workers[0], exposing, folder / "inputs.npz")
        request = ReplayRequest(source=path, python=run.python, inputs=str(inputs))
        record = workers[0].replay(
            job_spec(request, Materials({"kind": "text", "path": str(path)}), run, folder / "run", None),
            folder / "run",
            evaluator.timeout(),
        )
        if evaluator.out_of_time():  # cut by --max-time: no values, and no verdict that they cannot be had
            from xlatools.reduce.evaluate import OutOfTime

            raise OutOfTime
        outputs = folder / "run" / "outputs.npz"
        if record.failure or not outputs.is_file() or len(record.outputs) != len(names):
            return False
        for index, name in enumerate(names):
            evaluator.values.recorded.setdefault(name, RecordedValue(path=str(outputs), index=index))
        for name, literal in zip(names, workers[0].splats(outputs)):
            self.splats.setdefault(name, literal)
        self._keep(evaluator)
        self.save()
        return True
