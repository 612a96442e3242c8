"""Capture where every process of a stuck run is, before anything is stopped (docs/hangs.md).

The runner (run/process.py) calls `StuckWatch.capture` when the run's --timeout is reached, or when no
process made progress (no output, no observer event) for --stall seconds. For every Python process of
the run (each process of a group, and the Python processes they started) it reads, side by side:
- `pystack remote PID --locals`: every Python thread with its locals (the compile call's `module_name`
  names the module being compiled);
- `pystack remote PID --native-all`: every thread, Python's and XLA's own (compiles and executions run
  on XLA's worker threads since jaxlib 0.4.3x), native frames merged with Python frames;
and the run's observer status (`observer/<pid>.status.json`, docs/metrics.md) where there is one. One
file per process under `stacks/`, `stacks/summary.txt`, and the manifest's `stuck` record.

Why pystack: it is a PyPI wheel (no system package), reads Python and native stacks of every thread
including those Python never registered; py-spy's native mode shows only Python's threads (it misses
the XLA worker thread that compiles), and gdb needs minutes to load jaxlib's symbols on a busy machine.
Both need ptrace rights over the program (the same user, or CAP_SYS_PTRACE in a container).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.records.hang import ModuleSeen, StuckCapture, StuckProcess
from xlatools.run.hang.observer import last_observer_event, observer_executions, read_observer

if TYPE_CHECKING:
    from xlatools.console import Reporter
    from xlatools.records.run import RunManifest

FOLDER = "stacks"
BUSY = 0.01  # of a core: a process using more is at work (a loaded machine may give an importing jax 10% or less;
# one that waits in a collective or polls in a sleep loop uses about 0.1%)
STACK_TIMEOUT_S = float(os.environ.get("XLATOOLS_STACKS_TIMEOUT", "60"))  # one pystack call


def pystack_argv(env: dict[str, str] | None = None) -> list[str] | None:
    """How to run pystack: XLATOOLS_PYSTACK, the one installed beside xlatools, or on PATH."""
    env = dict(os.environ) if env is None else env
    named = env.get("XLATOOLS_PYSTACK")
    if named is not None:
        return [named] if named and os.access(named, os.X_OK) else None
    beside = Path(sys.executable).parent / "pystack"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("pystack", path=env.get("PATH"))
    return [found] if found else None


def python_processes(root: int) -> list[int]:
    """`root` and the Python processes it started (a data loader's workers), not our crash watcher."""
    from xlatools.proctree import descendants

    found = []
    for pid in [root, *descendants(root)]:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if pid == root or ("python" in exe and not any(b"crash_watcher" in part for part in argv)):
            found.append(pid)
    return found


def _pystack(argv: list[str], pid: int, mode: str, running: list) -> tuple[str, str | None]:
    """(its report, None) or ("", why not). The reader is listed in `running` while it runs (Ctrl-C ends it)."""
    import subprocess

    from xlatools.proctree import end_tree

    try:
        proc = subprocess.Popen(
            [*argv, "remote", "--no-color", mode, str(pid)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return "", f"cannot run pystack: {exc.strerror or exc}"
    running.append(proc)
    try:
        out, err = proc.communicate(timeout=STACK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        end_tree(proc, grace=1.0)
        proc.communicate()
        return "", f"pystack {mode} did not answer in {STACK_TIMEOUT_S:g} s"
    if proc.returncode != 0:
        said = " ".join(err.split())[:400] or f"exit {proc.returncode}"
        return out, f"pystack {mode}: {said}"
    return out, None


def _both(argv: list[str] | None, pid: int, running: list) -> tuple[str, str, str | None]:
    """(Python threads with locals, every thread's native frames, why something is missing): one after
    the other, as a process has one tracer at a time."""
    if argv is None:
        return "", "", "pystack is not installed"
    python, why_p = _pystack(argv, pid, "--locals", running)
    native, why_n = _pystack(argv, pid, "--native-all", running)
    return python, native, why_p or why_n


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def stuck_watch(
    timeout: float | None, stall: float | None, bundle: Path, reporter: Reporter | None, record: RunManifest | None
):
    """What reads every process's stacks before a timeout (or --stall) stops the run, into `record.stuck`;
    None when the run has neither, or XLATOOLS_STACKS=0 (a timeout then stops the run at once)."""
    if os.environ.get("XLATOOLS_STACKS", "1") in ("0", "false", "no", "off") and stall is None:
        return None
    return StuckWatch(bundle, reporter, stall, record) if timeout is not None or stall is not None else None


class StuckWatch:
    """Handed to the runner: `capture` before a stuck run is stopped; `stall` seconds without progress end
    it too; `progress()` is when the observer last saw something happen."""

    def __init__(
        self, bundle: Path, reporter: Reporter | None, stall: float | None = None, record: RunManifest | None = None
    ):
        self.bundle, self.reporter, self.stall, self.record = Path(bundle), reporter, stall, record
        self.result: StuckCapture | None = None
        self._lock = threading.Lock()
        self._cpu: dict[int, tuple[float, float]] = {}  # pid -> (when, CPU seconds) at the last look

    def progress(self) -> float | None:
        return last_observer_event(self.bundle)

    def moved(self, procs: list[tuple[int, float]], t0: float) -> float:
        """time.monotonic() of the run's last progress: output of any process ((pid, its last output) each), an
        observer event, or a process at work: more than BUSY of a core since the last look (importing jax or
        a long compile prints nothing for a long time; a process that waits in a collective or sleeps in a
        polling loop uses next to nothing). A silent busy loop is not a stall: --timeout still catches it."""
        now, last = time.monotonic(), max([out for _, out in procs] + [self.progress() or t0])
        for pid, _ in procs:
            cpu, before = _cpu_seconds(pid), self._cpu.get(pid)
            self._cpu[pid] = (now, cpu)
            if before is not None and cpu - before[1] > BUSY * (now - before[0]):
                last = now
        return last

    def capture(self, roots: list[tuple[int | None, int]], trigger: str, reason: str) -> None:
        """Every Python process under `roots` ((process index or None, pid) of each process still running)."""
        with self._lock:
            if self.result is not None:
                return
            self.result = found = capture(self.bundle, roots, trigger, reason, self.reporter)
        if self.reporter is not None:
            self.reporter.warn(f"stuck: {found.summary} ({FOLDER}/summary.txt)")
        if self.record is not None:
            self.record.stuck = found
            self.record.notes.append(f"{found.reason}: {found.summary} (stacks: {FOLDER}/summary.txt)")


def capture(
    bundle: Path, roots: list[tuple[int | None, int]], trigger: str, reason: str, reporter: Reporter | None
) -> StuckCapture:
    """Read every process's stacks (all at once, each call bounded), write them, and say where each one is."""
    from importlib.metadata import PackageNotFoundError, version

    t0 = time.monotonic()
    argv = pystack_argv()
    try:
        tool = f"pystack {version('pystack')}" if argv else "none"
    except PackageNotFoundError:
        tool = "pystack"
    found = StuckCapture(reason=reason, trigger=trigger, tool=tool)
    targets = [(index, pid, pid == root) for index, root in roots for pid in python_processes(root)]
    if reporter is not None:
        reporter.warn(f"{reason}: reading the stacks of {len(targets)} process(es) before stopping the run")
    folder = Path(bundle) / FOLDER
    folder.mkdir(exist_ok=True)
    if argv is None:
        found.tool = "none: pystack is not installed (pip install pystack; or set XLATOOLS_PYSTACK)"
    running: list = []  # the pystack processes: Ctrl-C ends them, nothing of a capture outlives it
    pool = ThreadPoolExecutor(max_workers=max(1, len(targets)))  # every process at once
    try:
        reads = {pid: pool.submit(_both, argv, pid, running) for _, pid, _ in targets}
        for index, pid, is_root in targets:
            python, native, why = reads[pid].result()
            name = f"p{index if index is not None else 0}" + ("" if is_root else f"-pid{pid}") + ".txt"
            found.processes.append(_one(bundle, folder / name, pid, index if is_root else None, python, native, why))
    except BaseException:
        from xlatools.proctree import signal_tree

        for proc in running:
            signal_tree(proc.pid, [], signal.SIGKILL)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    from xlatools.run.hang.where import odd_one_out

    found.odd, found.summary = odd_one_out(found.processes)
    found.seconds = round(time.monotonic() - t0, 3)
    _write_summary(folder / "summary.txt", found)
    return found


def from_task_files(bundle: Path, tasks: list[tuple[int | None, int, str]], trigger: str, reason: str) -> StuckCapture:
    """The capture of a Slurm job's tasks: each task read its program's stacks on its node before stopping it
    (cluster/task.py) into PREFIX.locals.txt / PREFIX.native.txt; `tasks`: (process index, pid, PREFIX)."""
    t0 = time.monotonic()
    found = StuckCapture(reason=reason, trigger=trigger, tool="pystack (on the node, by cluster/task.py)")
    folder = Path(bundle) / FOLDER
    for index, pid, prefix in tasks:
        texts, errors = [], []
        for suffix in ("locals", "native"):
            try:
                text = Path(f"{prefix}.{suffix}.txt").read_text(errors="replace")
            except OSError:
                text, error = "", f"no {suffix} report from the task (no pystack on the node?)"
                errors.append(error)
            said = [line for line in text.splitlines() if line.startswith("#error ")]
            errors += [line[len("#error ") :] for line in said]
            texts.append(text)
        for leftover in (f"{prefix}.locals.txt", f"{prefix}.native.txt", f"{prefix}.read", f"{prefix}.busy"):
            Path(leftover).unlink(missing_ok=True)
        name = f"p{index if index is not None else 0}.txt"
        found.processes.append(_one(bundle, folder / name, pid, index, texts[0], texts[1], "; ".join(errors) or None))
    from xlatools.run.hang.where import odd_one_out

    found.odd, found.summary = odd_one_out(found.processes)
    found.seconds = round(time.monotonic() - t0, 3)
    _write_summary(folder / "summary.txt", found)
    return found


def _one(
    bundle: Path, path: Path, pid: int, index: int | None, python: str, native: str, error: str | None
) -> StuckProcess:
    from xlatools.fsutil import atomic_write_text
    from xlatools.run.hang.stacks import parse
    from xlatools.run.hang.where import locate

    status = read_observer(bundle, pid)
    process = StuckProcess(pid=pid, process=index, error=error if not (python or native) else None)
    if python or native:
        threads_n, threads_p = parse(native), parse(python)
        where = locate(threads_n, threads_p)
        process.state, process.where, process.collective = where.state, where.where, where.collective
        process.phase, process.threads = where.phase, len(threads_n or threads_p)
        if where.compiling:
            process.compiling = ModuleSeen(name=where.compiling)
    if status is not None:
        process.last_compiled, process.last_executed = status.last_compiled, status.last_executed
        if status.state == "compiling" and status.current is not None:
            process.compiling = status.current
    process.executions = observer_executions(bundle, pid)
    head = [
        f"pid {pid}" + (f", process {index}" if index is not None else ""),
        f"where: {process.where or error or 'unknown'}",
        f"observer status: {status.text if status is not None else 'none (no observer file)'}",
    ]
    if error:
        head.append(f"could not read everything: {error}")
    text = "\n".join(
        [*head, "", "== Python threads, with locals (pystack --locals)", python or "(none)", "",
         "== every thread, native and Python frames (pystack --native-all)", native or "(none)", ""]
    )  # fmt: skip
    atomic_write_text(path, text, durable=False)
    process.file = f"{FOLDER}/{path.name}"
    return process


def _write_summary(path: Path, found: StuckCapture) -> None:
    from xlatools.fsutil import atomic_write_text

    lines = [found.reason, f"read with {found.tool} in {found.seconds:.1f} s", "", found.summary, ""]
    for p in found.processes:
        mark = "  <- odd one out" if p.pid in found.odd else ""
        label = f"process {p.process}" if p.process is not None else "process"
        lines.append(f"{label} pid {p.pid}: {p.state}: {p.where or p.error or ''}{mark}")
        for what, seen in (("last compiled", p.last_compiled), ("last executed", p.last_executed)):
            if seen is not None:
                lines.append(f"    {what}: {seen.name}" + (f" (#{seen.m})" if seen.m is not None else ""))
        if p.file:
            lines.append(f"    stacks: {p.file}")
    atomic_write_text(path, "\n".join(lines) + "\n", durable=False)
