"""Long-lived target processes (reduce/probes/oracle_worker.py) that parse and replay many modules.

A reduction runs hundreds of candidates, a replay one job per module and reference; starting
jax for each would cost a second or more apiece (2.5-3 s on a GPU). A Worker imports jax once
and serves requests; `replay` keeps one per (interpreter, platform, flags): ReplayPool. Each replay is replay's own
job (replay_module.py's code, its job.json and result.json), read back with
replay.jobs.job_record, so a candidate's record is exactly what `xlatools replay`
would have recorded. A worker that dies (a compiler abort, a segfault) or overruns the
timeout gives a crash or timeout record for that job and is started again for the next.
"""

from __future__ import annotations

import json
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlatools.errors import EnvironmentMissing, Interrupted
from xlatools.records.replay import RunRecord
from xlatools.replay.plan import ReplayRequest, RunConfig
from xlatools.vocab import Status

WORKER = Path(__file__).resolve().parent.parent / "reduce" / "probes" / "oracle_worker.py"
START_TIMEOUT = 300.0


class WorkerDied(Exception):
    def __init__(self, returncode: int | None, timed_out: bool = False):
        super().__init__(f"worker ended (status {returncode})")
        self.returncode, self.timed_out = returncode, timed_out


class WorkerRefused(Exception):
    """The worker answered a request with an error (a file it was given is missing or not what it should be)."""


@dataclass(frozen=True)
class ParseAnswer:
    ok: bool
    error: str = ""  # the target parser's message


@dataclass
class Worker:
    run: RunConfig
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = None
    retired: bool = False  # stopped for good (Ctrl-C): a slot thread still running must not start it again

    def start(self, timeout: float | None = None) -> None:
        """Start the process and wait for its hello: at most START_TIMEOUT, or `timeout` (a job's, which its
        worker's start counts against: a worker that never answers, stopped or stuck, is a timeout of that job)."""
        from xlatools.proctree import held_interrupts

        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as err, held_interrupts():  # started and kept as one step: stop() ends it
            self.proc = subprocess.Popen(
                [self.run.python, str(WORKER)],
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
                cwd=str(self.log.parent),
            )
        try:
            hello = self._read(START_TIMEOUT if timeout is None else min(timeout, START_TIMEOUT))
        except WorkerDied as died:
            if died.timed_out and timeout is not None and timeout < START_TIMEOUT:
                raise  # the job's timeout ran out while its worker started
            from xlatools.fsutil import tail_lines

            tail = tail_lines(self.log, 5)
            raise EnvironmentMissing(
                f"{self.run.python} cannot start a replay worker (status {died.returncode})",
                hint=" | ".join(tail) or "check that jax and numpy import there",
            ) from None
        if "fatal" in hello:
            raise EnvironmentMissing(f"{self.run.python}: {hello['fatal']}")

    def stop(self) -> None:
        if self.proc is not None:
            from xlatools.proctree import end_tree

            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
            end_tree(self.proc, grace=2.0)
            self.proc = None

    def _read(self, timeout: float | None) -> dict[str, Any]:  # one JSON reply line of probes/oracle_worker.py
        assert self.proc is not None and self.proc.stdout is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.proc.stdout], [], [], wait)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    code = self.proc.wait()
                    self.proc = None
                    raise WorkerDied(code)
                return json.loads(line)
            if deadline is not None and time.monotonic() >= deadline:
                self.stop()
                raise WorkerDied(None, timed_out=True)

    def request(self, op: str, timeout: float | None = None, **fields: object):
        """Send one request (see probes/oracle_worker.py) and return its reply."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.proc is None:
            if self.retired:
                raise Interrupted(f"interrupted ({self.run.label} worker stopped)")
            self.start(timeout)
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            code = self.proc.wait()
            self.proc = None
            raise WorkerDied(code) from None
        reply = self._read(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if "error" in reply:
            raise WorkerRefused(str(reply["error"]))
        return reply

    def parse(self, paths: list[Path]) -> list[ParseAnswer]:
        """Each HLO text file through this jaxlib's HLO parser (no compile, no run)."""
        reply = self.request("parse", paths=[str(p) for p in paths])
        return [ParseAnswer(ok=bool(r.get("ok")), error=str(r.get("error") or "")) for r in reply["results"]]

    def compose(
        self, sources: list[tuple[str, int]], out: Path, layouts: dict[str, list[list[int]]] | None = None
    ) -> Path:
        """An .npz of arrays picked from others ((npz, index) per array, in parameter order)."""
        self.request("compose", sources=[list(s) for s in sources], out=str(out), layouts=layouts)
        return out

    def splats(self, path: Path) -> list[str | None]:
        """Per array of the .npz: the HLO literal of its value when every element is the same, else None."""
        return list(self.request("splats", path=str(path)).get("literals", []))

    def replay(
        self,
        spec: dict[str, object],  # job_spec's job.json
        run_dir: Path,
        timeout: float | None,
        run: RunConfig | None = None,
    ) -> RunRecord:
        """Run one replay job here; the record replay would have made of it, as `run` (a worker serves every run
        of its interpreter and settings: the test and a reference alike; default: the run it was started for)."""
        from xlatools.fsutil import atomic_write_json
        from xlatools.replay.jobs import job_record

        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(run_dir / "job.json", spec)
        offset = self.log.stat().st_size if self.log.exists() else 0
        started = time.monotonic()
        status, code = Status.OK, 0  # type: Status, int | None
        try:
            self.request("replay", timeout, job=str(run_dir / "job.json"))
        except WorkerDied as died:
            status, code = (Status.TIMEOUT if died.timed_out else Status.FAILED), died.returncode
        except KeyboardInterrupt:
            self.stop()
            raise Interrupted(f"interrupted while replaying ({self.run.label})") from None
        _copy_log(self.log, offset, run_dir / "stderr.log")
        return job_record(run or self.run, run_dir, status, code, round(time.monotonic() - started, 3), timeout)


def _copy_log(log: Path, offset: int, dest: Path) -> None:
    try:
        with open(log, "rb") as handle:
            handle.seek(offset)
            dest.write_bytes(handle.read()[-256 * 1024 :])
    except OSError:
        pass


def worker_env(run: RunConfig, caller: dict[str, str], gpu_platform: str) -> dict[str, str]:
    """The run's environment (XLA_FLAGS, platform) for a worker. x64 on: a module's f64/s64 parameters must
    reach it as they are (with x64 off jax would turn the inputs into 32-bit arrays)."""
    env = run.env(caller, gpu_platform, None)
    env["JAX_ENABLE_X64"] = "1"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def make_worker(run: RunConfig, caller: dict[str, str], gpu_platform: str, folder: Path, slot: int) -> Worker:
    return Worker(run, worker_env(run, caller, gpu_platform), folder / f"{run.label}-{slot}.log")


def stop_all(workers: list[Worker], retire: bool = False) -> None:
    for worker in workers:
        worker.retired = worker.retired or retire
        worker.stop()


class ReplayPool:
    """`replay`'s workers: one long-lived target process per (interpreter, platform, flags), serving every
    module's job of that kind, so a 7-module replay starts jax twice (test, reference), not 14 times.

    Crash isolation is kept: a module that kills its worker (a compiler abort, a segfault) costs that
    worker, which the next job starts again, and that job is run once more alone in a fresh process with
    crash capture, so its record (signal, phase, native backtrace) is what a one-process replay gives.
    XLATOOLS_REPLAY_WORKERS=0 runs every job in a fresh process, as before."""

    def __init__(self, folder: Path, enabled: bool = True):
        self.folder, self.enabled = folder, enabled
        self.workers: dict[tuple[str, str], Worker] = {}

    def worker_for(self, run: RunConfig, env: dict[str, str]) -> Worker:
        key = (run.python, json.dumps(env, sort_keys=True))
        if key not in self.workers:
            worker_env = {**env, "JAX_ENABLE_X64": "1"}
            worker_env.setdefault("PYTHONUNBUFFERED", "1")
            self.workers[key] = Worker(run, worker_env, self.folder / f"{run.label}-{len(self.workers)}.log")
        return self.workers[key]

    def run(
        self,
        request: ReplayRequest,
        materials,
        run: RunConfig,
        run_dir: Path,
        test_dir: Path | None,
        env: dict[str, str],
        one_shot,
    ) -> RunRecord:
        """One job (replay.jobs.job_spec of these) in its worker; `one_shot()` runs it in a fresh process
        (replay.jobs.run_job)."""
        from xlatools.replay.jobs import job_spec
        from xlatools.vocab import ReplayOutcome

        if not self.enabled:
            return one_shot()
        worker = self.worker_for(run, env)
        run_dir.mkdir(parents=True, exist_ok=True)
        record = worker.replay(job_spec(request, materials, run, run_dir, test_dir), run_dir, request.timeout, run)
        if worker.proc is None and record.failure == ReplayOutcome.CRASH:  # it took the worker with it
            return one_shot()
        return record

    def close(self) -> None:
        stop_all(list(self.workers.values()), retire=True)
