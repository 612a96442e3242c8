"""Long-lived target processes (probes/oracle_worker.py) that parse and replay many candidates.

A reduction runs hundreds of candidates; starting jax for each would cost a second or
more apiece. A Worker imports jax once and serves requests. Each replay is replay's own
job (replay_module.py's code, its job.json and result.json), read back with
replay.jobs.read_record, so a candidate's record is exactly what `xlatools replay`
would have recorded. A worker that dies (a compiler abort, a segfault) or overruns the
timeout gives a crash or timeout record for that job and is started again for the next.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlatools.errors import EnvironmentMissing, Interrupted
from xlatools.replay.plan import RunConfig
from xlatools.replay.records import RunRecord

WORKER = Path(__file__).resolve().parent / "probes" / "oracle_worker.py"
START_TIMEOUT = 300.0


class WorkerDied(Exception):
    def __init__(self, returncode: int | None, timed_out: bool = False):
        super().__init__(f"worker ended (status {returncode})")
        self.returncode, self.timed_out = returncode, timed_out


@dataclass
class Worker:
    run: RunConfig
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = None
    versions: dict[str, Any] = field(default_factory=dict)
    starts: int = 0

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen([self.run.python, str(WORKER)], env=self.env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, start_new_session=True, cwd=str(self.log.parent))
        self.starts += 1
        try:
            hello = self._read(START_TIMEOUT)
        except WorkerDied as died:
            tail = self.log.read_text(errors="replace").splitlines()[-5:]
            raise EnvironmentMissing(f"{self.run.python} cannot start the reduce worker (status {died.returncode})",
                                     hint=" | ".join(tail) or "check that jax and numpy import there") from None
        if "fatal" in hello:
            raise EnvironmentMissing(f"{self.run.python}: {hello['fatal']}")
        self.versions = hello.get("versions") or {}

    def stop(self) -> None:
        if self.proc is not None:
            from xlatools.proctree import end_tree

            try:
                self.proc.stdin.close()
            except OSError:
                pass
            end_tree(self.proc, grace=2.0)
            self.proc = None

    def _read(self, timeout: float | None) -> dict[str, Any]:
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

    def request(self, payload: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        if self.proc is None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(payload) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            code = self.proc.wait()
            self.proc = None
            raise WorkerDied(code) from None
        return self._read(timeout)

    def replay(self, spec: dict[str, Any], run_dir: Path, timeout: float | None) -> RunRecord:
        """Run one replay job here; the record replay would have made of it."""
        from xlatools.fsutil import atomic_write_json
        from xlatools.replay.jobs import read_record

        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(run_dir / "job.json", spec)
        offset = self.log.stat().st_size if self.log.exists() else 0
        started = time.monotonic()
        status, code = "ok", 0
        try:
            self.request({"op": "replay", "job": str(run_dir / "job.json")}, timeout)
        except WorkerDied as died:
            status, code = ("timeout" if died.timed_out else "failed"), died.returncode
        except KeyboardInterrupt:
            self.stop()
            raise Interrupted(f"interrupted while replaying ({self.run.label})") from None
        _copy_log(self.log, offset, run_dir / "stderr.log")
        return read_record(self.run, run_dir, status, code, round(time.monotonic() - started, 3), timeout)


def _copy_log(log: Path, offset: int, dest: Path) -> None:
    try:
        with open(log, "rb") as handle:
            handle.seek(offset)
            dest.write_bytes(handle.read()[-256 * 1024:])
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


def stop_all(workers: list[Worker]) -> None:
    for worker in workers:
        worker.stop()


def os_env() -> dict[str, str]:
    return dict(os.environ)
