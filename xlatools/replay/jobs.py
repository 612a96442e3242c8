"""One module's files for the target, one job (a target process) and what it left behind.

Host side of replay_module.py: snapshots and .hlo.pb files are read here (protobuf)
and handed on as a bare serialized HloModuleProto plus .npz arrays, so the target
needs only jax and numpy. A target that dies (a compiler abort, a segfault) is a
`crash` record with the signal and the tail of its log, never an error of ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlatools.fsutil import atomic_write_bytes, atomic_write_json, tail_lines
from xlatools.proctree import signal_name
from xlatools.records.base import to_json
from xlatools.records.replay import InputSource, RunRecord
from xlatools.replay.plan import INPUT_MODES, ReplayRequest, RunConfig
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import ReplayOutcome, SourceForm, Status

PROBE = Path(__file__).resolve().parent / "probes" / "replay_module.py"
LOG_TAIL_LINES = 40
RECORDED = "recorded"  # the folder of the arguments and results a run recorded itself (run/recorder.py)


@dataclass(frozen=True)
class ArraysFile:
    """An .npz the target reads, with each array's layout (the target transposes back)."""

    path: str
    minor_to_major: list[list[int]]


@dataclass
class Materials:
    module: dict[str, str]  # {"kind": text|proto|mlir, "path": ...}, as job.json names a module file
    alternatives: list[dict[str, str]] = field(default_factory=list)
    snapshot_args: ArraysFile | None = None
    snapshot_result: ArraysFile | None = None
    compile_options: dict[str, str] = field(default_factory=dict)  # the run's non-default debug options

    def forms(self) -> list["Materials"]:
        """These materials with each module form first in turn (auto tries the next when one is not the run's)."""
        every = [self.module, *self.alternatives]
        return [
            Materials(
                first,
                [m for m in every if m is not first],
                self.snapshot_args,
                self.snapshot_result,
                self.compile_options,
            )
            for first in every
        ]


def _arrays_npz(arrays, path: Path) -> ArraysFile:
    from xlatools.replay.npz import npy_bytes, strings_npy, write_npz

    members = {f"a{i}": npy_bytes(a.storage, a.physical_shape, a.data) for i, a in enumerate(arrays)}
    members["__dtypes__"] = strings_npy([a.dtype for a in arrays])
    write_npz(path, members)
    return ArraysFile(str(path), [a.minor_to_major for a in arrays])


def prepare_materials(
    source: ModuleSource, source_from: SourceForm, folder: Path, literals: bool = True, hlo_first: bool = False
) -> Materials:
    """Write what the target needs for `source` into `folder` (UsageError for unreadable files). The module's
    forms in the order a replay tries them: its StableHLO (what the run compiled), then its HLO text and proto;
    `hlo_first`: the HLO forms first (reduce and isolate edit HLO text: the text is what they must reproduce)."""
    from xlatools.replay.hloproto import is_unoptimized, read_module_proto, read_snapshot
    from xlatools.replay.refusals import elides_constants, refuse_optimised_only

    folder.mkdir(parents=True, exist_ok=True)
    snapshot = read_snapshot(source.snapshot, literals) if source.snapshot else None
    # --from snapshot: the snapshot's arguments and result, with the module in an unoptimised form.
    forms = ("text", "proto", "mlir") if source_from in (SourceForm.AUTO, SourceForm.SNAPSHOT) else (source_from,)
    candidates: list[dict[str, str]] = []
    if source.text and "text" in forms and not (source_from != SourceForm.TEXT and elides_constants(source.text)):
        candidates.append({"kind": "text", "path": str(source.text)})  # text that lost constants only when asked
    if source.proto and "proto" in forms:
        atomic_write_bytes(folder / "module.pb", read_module_proto(source.proto).serialized)
        candidates.append({"kind": "proto", "path": str(folder / "module.pb")})
    if source.mlir and "mlir" in forms:
        candidates.insert(len(candidates) if hlo_first else 0, {"kind": "mlir", "path": str(source.mlir)})
    if snapshot and is_unoptimized(source.snapshot) and (source_from == SourceForm.SNAPSHOT or not candidates):
        atomic_write_bytes(folder / "snapshot-module.pb", snapshot.module.serialized)
        candidates.insert(0, {"kind": "proto", "path": str(folder / "snapshot-module.pb")})
    if not candidates:
        refuse_optimised_only(source)
        from xlatools.errors import UsageError

        raise UsageError(
            f"module {source.label}: nothing to replay with --from {source_from}",
            hint="--from auto uses whatever the dump has",
        )
    from xlatools.replay.as_run import read_debug_options, run_files

    materials = Materials(
        candidates[0],
        candidates[1:],
        compile_options=read_debug_options(run_files(source.run_stem).debug_options),
    )
    if snapshot and literals:
        materials.snapshot_args = _arrays_npz(snapshot.arguments, folder / "snapshot-arguments.npz")
        if snapshot.result:
            materials.snapshot_result = _arrays_npz(snapshot.result, folder / "snapshot-result.npz")
    return materials


def input_source(inputs: str | None, seed: int, snapshot: Path | None) -> InputSource:
    """Where the test run's arguments come from (pure; job_spec makes the same choice: a snapshot's arguments
    are read when no --inputs is given). References take the test's."""
    if inputs in INPUT_MODES:
        return InputSource(inputs, seed=seed if inputs == "random" else None)
    if inputs:
        return InputSource("file", path=str(Path(inputs).resolve()))
    if snapshot is not None:
        return InputSource("recorded" if snapshot.parent.name == RECORDED else "snapshot", path=str(snapshot))
    return InputSource("random", seed=seed)


def job_spec(
    request: ReplayRequest,
    materials: Materials,
    run: RunConfig,
    run_dir: Path,
    test_dir: Path | None,
    expected_files: list[dict[str, str]] | None = None,
) -> dict[str, Any]:  # job.json: the target-side script reads it untyped
    """The JSON the target script reads (pure). References take the test's inputs and compare with its outputs.
    `expected_files`: the outputs to compare with instead (the references' outputs, for a test run again at
    full precision on the test's inputs)."""
    expected = []
    test_inputs = test_dir / "inputs.npz" if test_dir else None
    if run.role == "reference" and test_inputs and test_inputs.is_file():
        inputs = {"mode": "file", "path": str(test_inputs)}
        if (test_dir / "outputs.npz").is_file():
            expected.append({"label": run.label, "path": str(test_dir / "outputs.npz"), "role": "reference"})
    elif request.inputs in INPUT_MODES:
        inputs = {"mode": request.inputs, "seed": request.seed}
    elif request.inputs:
        inputs = {"mode": "file", "path": str(Path(request.inputs).resolve())}
    elif materials.snapshot_args is not None:
        inputs = {"mode": "file", **to_json(materials.snapshot_args)}
        if materials.snapshot_result and run.role == "test":
            expected.append({"label": "snapshot", **to_json(materials.snapshot_result)})
    else:
        inputs = {"mode": "random", "seed": request.seed}
    if expected_files is not None:
        expected = list(expected_files)
    alternatives = list(materials.alternatives)
    if run.role == "reference" and test_dir and (test_dir / "module.txt").is_file():
        alternatives.append({"kind": "text", "path": str(test_dir / "module.txt")})  # the module as the test read it
    return {
        "module": materials.module,
        "alternatives": alternatives,
        "inputs": inputs,
        "expected": expected,
        "atol": request.atol,
        "rtol": request.rtol,
        "iterations": request.iterations,
        "print_literals": request.print_literals,
        "out_dir": str(run_dir),
        "compile_options": dict(materials.compile_options),
    }


def run_job(
    request: ReplayRequest,
    materials: Materials,
    run: RunConfig,
    run_dir: Path,
    test_dir: Path | None,
    env: dict[str, str],
    expected_files: list[dict[str, str]] | None = None,
) -> RunRecord:
    """Run replay_module.py for one job in the target interpreter and read what it wrote."""
    from xlatools.debug.crash import with_crash_capture
    from xlatools.errors import Interrupted
    from xlatools.run.process import execute

    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / "job.json", job_spec(request, materials, run, run_dir, test_dir, expected_files))
    timeout = request.timeout
    result = execute(
        [run.python, str(PROBE), str(run_dir / "job.json")],
        with_crash_capture(env, run_dir),
        str(run_dir),
        run_dir / "stdout.log",
        run_dir / "stderr.log",
        timeout,
        None,
        None,
    )
    if result.status == Status.INTERRUPTED:
        raise Interrupted(f"interrupted while replaying ({run.label})")
    return job_record(run, run_dir, result.status, result.returncode, result.duration, timeout)


def job_record(
    run: RunConfig, run_dir: Path, status: Status, returncode: int | None, duration: float | None, timeout: float | None
) -> RunRecord:
    """The record of a job that ended with `status` (ok, failed or timeout), from what it left in `run_dir`.
    Also reduce's long-lived workers', which run many jobs in one target process."""
    phase = _read_text(run_dir / "phase")
    if status == Status.TIMEOUT:
        record = RunRecord(
            label=run.label,
            python=run.python,
            failure=ReplayOutcome.TIMEOUT,
            phase=phase,
            message=f"no result after {timeout:g} s (stopped)",
        )
    else:
        record = read_answer(run_dir, run) or _died(run, phase, returncode, run_dir)
    record.returncode, record.duration_s, record.dir = returncode, duration, str(run_dir)
    if record.failure:
        record.log_tail = tail_lines(run_dir / "stderr.log", LOG_TAIL_LINES)
    return record


def _died(run: RunConfig, phase: str | None, returncode: int | None, run_dir: Path) -> RunRecord:
    """A target that left no result.json: it died (a compiler abort, a segfault), a crash of the module."""
    from xlatools.debug.crash import FILE, backtrace_note

    name, note = signal_name(returncode), backtrace_note(run_dir)
    return RunRecord(
        label=run.label,
        python=run.python,
        failure=ReplayOutcome.CRASH,
        phase=phase,
        signal=name,
        native_backtrace=str(run_dir / FILE) if note else None,
        message=f"the target died ({name or f'exit status {returncode}'}) during {phase or 'start-up'}"
        + (f"; {note}" if note else ""),
    )


def read_answer(run_dir: Path, run: RunConfig) -> RunRecord | None:
    """What the target wrote into result.json, as a record (None when it wrote none), with the
    fingerprint of the optimised module it compiled. An answer of a shape this xlatools does not
    read is a target script it does not speak with: cannot-run, saying so."""
    from xlatools.errors import UsageError
    from xlatools.records.base import validate
    from xlatools.run.hlo_canon import fingerprint

    path = run_dir / "result.json"
    data = _read_json(path)
    if not isinstance(data, dict):
        return None
    try:
        record = validate({**data, "label": run.label, "python": run.python}, RunRecord, path, what="replay result")
    except UsageError as exc:
        problems = "; ".join(f"[{problem.key}] {problem.message}" for problem in exc.problems)
        return RunRecord(
            label=run.label, python=run.python, failure=ReplayOutcome.CANNOT_RUN, message=f"{exc.message}: {problems}"
        )
    optimized = _read_text(run_dir / "optimized.txt")
    if optimized:
        record.fingerprint = fingerprint(optimized)
    return record


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
