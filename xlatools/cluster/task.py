"""One task of an xlatools Slurm job (standard library only: it runs in the target interpreter on
the node, copied into the job's folder beside tasks.json). Usage: python task.py

Picks its part of tasks.json by SLURM_PROCID, runs that program with its own logs, stops it at its
timeout (exit 124) or when Slurm stops the task (SIGTERM at a time limit or scancel), and writes
its exit status to its exit file (JSON) so xlatools reads the outcome of every task."""

import json
import os
import signal
import subprocess
import sys
import time

_stop: list[int] = []


def _on_term(signum, _frame):
    _stop.append(signum)


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    except ProcessLookupError:
        pass


def _progress(paths):
    """The newest change of any of `paths` (files, or folders whose files count), time.time()."""
    newest = 0.0
    for path in paths:
        try:
            names = [os.path.join(path, n) for n in os.listdir(path)] if os.path.isdir(path) else [path]
        except OSError:
            continue
        for name in names:
            try:
                newest = max(newest, os.stat(name).st_mtime)
            except OSError:
                continue
    return newest


def _cpu(pid):
    """CPU seconds of `pid` so far (0 when unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _stacks(task, pid):
    """The program's stacks before it is stopped: pystack's reports into `stacks`.locals.txt / .native.txt
    (xlatools reads them after the job); each read bounded; nothing when there is no pystack."""
    argv, prefix = task.get("pystack"), task.get("stacks")
    if not argv or not prefix:
        return
    for mode, suffix in (("--locals", "locals"), ("--native-all", "native")):
        try:
            done = subprocess.run(
                [*argv, "remote", "--no-color", mode, str(pid)], capture_output=True, text=True, timeout=60
            )
            text = done.stdout + ("" if done.returncode == 0 else "\n#error pystack: " + " ".join(done.stderr.split()))
        except (OSError, subprocess.SubprocessError) as exc:
            text = f"#error cannot run pystack: {exc}"
        with open(f"{prefix}.{suffix}.txt", "w") as handle:
            handle.write(text)
    with open(f"{prefix}.read", "w"):
        pass


def _after_peers(tasks, limit=120.0):
    """Wait (at most `limit` s) until every task has read its stacks or ended."""
    deadline = time.time() + limit
    while time.time() < deadline:
        if all(
            not t.get("stacks") or os.path.exists(t["stacks"] + ".read") or os.path.exists(t["exit_file"])
            for t in tasks
        ):
            return
        time.sleep(0.1)


def main():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks.json")) as handle:
        job = json.load(handle)
    task = job["tasks"][int(os.environ.get("SLURM_PROCID", "0"))]
    env = dict(os.environ)
    for name in task["unset"]:
        env.pop(name, None)
    env.update(task["env"])
    started = time.time()
    signal.signal(signal.SIGTERM, _on_term)
    with open(task["stdout"], "ab") as out, open(task["stderr"], "ab") as err:
        proc = subprocess.Popen(
            task["argv"], env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True
        )
    deadline = started + task["timeout"] if task.get("timeout") else None
    timed_out = stalled = False
    moved, checked, cpu = started, started, 0.0
    busy = [t["stacks"] + ".busy" for t in job["tasks"] if t.get("stacks")]  # every task's: a peer at work moves
    while proc.poll() is None:
        if _stop:
            _kill(proc)
            break
        now = time.time()
        if task.get("stall") and now - checked >= 1:
            cpu, used = _cpu(proc.pid), cpu
            if cpu - used > 0.01 * (now - checked):  # at work (importing, compiling): progress, as run/hang/ says
                open(task["stacks"] + ".busy", "w").close()
            moved, checked = max(moved, _progress((task.get("progress") or []) + busy)), now
            stalled = now - moved >= task["stall"]
        if stalled or (deadline is not None and now > deadline):
            timed_out = True
            _stacks(task, proc.pid)
            _after_peers(job["tasks"])  # a peer stopped first would let this one fail, not show where it was
            _kill(proc)
            break
        time.sleep(0.05)
    proc.wait()
    record = {
        "returncode": proc.returncode,
        "timed_out": timed_out,
        "stopped_by_signal": _stop[0] if _stop else None,
        "started": started,
        "finished": time.time(),
        "node": os.uname().nodename,
        "stalled": stalled,
        "pid": proc.pid,
    }
    temp = task["exit_file"] + ".tmp"
    with open(temp, "w") as handle:
        json.dump(record, handle)
    os.replace(temp, task["exit_file"])
    if _stop:
        sys.exit(128 + _stop[0])
    sys.exit(124 if timed_out else (proc.returncode if proc.returncode >= 0 else 128 - proc.returncode))


if __name__ == "__main__":
    main()
