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
    timed_out = False
    while proc.poll() is None:
        if _stop:
            _kill(proc)
            break
        if deadline is not None and time.time() > deadline:
            timed_out = True
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
