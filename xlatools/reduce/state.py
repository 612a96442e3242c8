"""The resumable state of one reduction: `<out>/.reduce-state/<module>-<key>/`.

The key comes from what was asked (module text, oracle, interpreters, flags, inputs), so
running the same command again finds the folder and continues from the best candidate
with every verdict cached; `--fresh` starts over. The folder holds state.json (written
atomically after every improvement and round), the original arguments and the recorded
values (.npz), and the work area of candidates.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlatools.bundle import safe_name, utc_now
from xlatools.fsutil import atomic_write_json
from xlatools.reduce.edits import Candidate
from xlatools.reduce.hlo_text import HloSyntaxError, parse_module, print_module
from xlatools.reduce.oracle import Verdict

if TYPE_CHECKING:
    from xlatools.reduce.evaluate import Evaluator
    from xlatools.reduce.reducer import Reducer

SCHEMA = "xlatools.reduce-state/1"


def state_key(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass
class StateStore:
    folder: Path
    key: str
    data: dict[str, Any] = field(default_factory=dict)
    splats: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def open(cls, out_root: Path, name: str, spec: dict[str, Any], fresh: bool) -> "StateStore":
        key = state_key(spec)
        folder = Path(os.path.abspath(out_root)) / ".reduce-state" / f"{safe_name(name)}-{key}"
        if fresh and folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        store = cls(folder, key)
        try:
            data = json.loads((folder / "state.json").read_text())
            if data.get("schema") == SCHEMA and data.get("key") == key:
                store.data = data
                store.splats = data.get("splats", {})
        except (OSError, ValueError):
            pass
        return store

    @property
    def resumed(self) -> bool:
        return bool(self.data.get("best"))

    @property
    def work(self) -> Path:
        return self.folder / "work"

    def save(self) -> None:
        atomic_write_json(self.folder / "state.json", {**self.data, "schema": SCHEMA, "key": self.key,
                                                       "splats": self.splats, "saved": utc_now()})

    def restore(self, evaluator: "Evaluator") -> tuple[Candidate, Verdict] | None:
        """The saved best candidate and the evaluator's cache and values, when the state has them."""
        best = self.data.get("best")
        if not best:
            return None
        try:
            module = parse_module(best["text"])
        except HloSyntaxError:
            return None
        evaluator.cache.update(self.data.get("cache", {}))
        evaluator.values.recorded.update({k: (v[0], v[1]) for k, v in self.data.get("values", {}).items()})
        return Candidate(module, best["inputs"], best["outputs"], "resumed"), Verdict.from_json(best["verdict"])

    def save_start(self, evaluator: "Evaluator", original: dict[str, Any]) -> None:
        self.data["original"] = original
        self.data["arguments"] = str(evaluator.values.arguments)
        self.save()

    def save_best(self, cand: Candidate, verdict: Verdict, reducer: "Reducer | None", evaluator: "Evaluator | None" = None) -> None:
        evaluator = evaluator or (reducer.evaluator if reducer else None)
        self.data["best"] = {"text": print_module(cand.module), "inputs": cand.inputs, "outputs": cand.outputs,
                             "verdict": verdict.to_json(), "note": cand.note}
        if evaluator is not None:
            self.data["cache"] = evaluator.cache
            self.data["values"] = {k: list(v) for k, v in evaluator.values.recorded.items()}
            self.data["counters"] = evaluator.counters.to_json()
        self.save()

    def save_rounds(self, reducer: "Reducer") -> None:
        self.data["rounds"] = [r.to_json() for r in reducer.rounds]
        self.data["cache"] = reducer.evaluator.cache
        self.data["counters"] = reducer.evaluator.counters.to_json()
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
        record = workers[0].replay(job_spec(request, Materials({"kind": "text", "path": str(path)}), run, folder / "run", None),
                                   folder / "run", plan.request.timeout)
        outputs = folder / "run" / "outputs.npz"
        if record.failure or not outputs.is_file() or len(record.outputs) != len(names):
            return False
        for index, name in enumerate(names):
            evaluator.values.recorded.setdefault(name, (str(outputs), index))
        literals = workers[0].request({"op": "splats", "path": str(outputs)}, None).get("literals", [])
        for name, literal in zip(names, literals):
            self.splats.setdefault(name, literal)
        self.data["values"] = {k: list(v) for k, v in evaluator.values.recorded.items()}
        self.save()
        return True
