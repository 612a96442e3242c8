"""xlatools' observer, part 1 (of sitecustomize.py beside it): its state and its two files per process.

Standalone, like sitecustomize.py: imports nothing of xlatools, nor jax. `<dir>/<pid>.events.jsonl` gets one
JSON object a line, each one write(2) on an O_APPEND descriptor (whole lines, even from several threads);
`<dir>/<pid>.status.json` is one JSON object padded to a fixed size, rewritten in place with pwrite(2).
The format is in docs/metrics.md.
"""

import itertools
import os
import sys
import time

STATUS_BYTES = 4096
BATCH = 100  # timed calls per `calls` line
state = {"dir": None, "budget": 20, "events": None, "status": None, "hooks": [], "process": None}
numbers = itertools.count(1)  # the process's compilations (next() holds the GIL: no two threads get one number)
modules = {}  # id(LoadedExecutable) -> Module (executables take no weak references: an id can come back)
untimed = {}  # m -> calls past the budget, of modules whose executable is gone
where = {"state": "python", "m": None, "name": None, "since": None, "last_compiled": None, "last_executed": None}


class Module:
    """One executable: its number and name, its timed calls not yet written, its counts."""

    __slots__ = ("m", "name", "timed", "wall", "cpu", "first", "untimed", "seen")

    def __init__(self, m, name):
        self.m, self.name, self.timed, self.wall, self.cpu, self.first, self.untimed = m, name, 0, [], [], 0, 0
        self.seen = False


def event(kind, **fields):
    fd = state["events"]
    if fd is None:
        return
    import json

    fields["ev"], fields["t"] = kind, round(time.time(), 6)
    try:
        os.write(fd, (json.dumps(fields, separators=(",", ":"), default=str) + "\n").encode())
    except (OSError, ValueError, TypeError):
        pass


def note(text):
    event("note", text=text)


def note_once(topic, text):
    """A note about `topic` the first time only (a failure that would repeat at every compile or call)."""
    if topic not in state.setdefault("noted", set()):
        state["noted"].add(topic)
        note(text)


def status(phase, m=None, name=None):
    """Where the process is now: `phase` compiling, executing or python (neither), in module `m`."""
    fd = state["status"]
    if fd is None:
        return
    import json

    now = round(time.time(), 6)
    if phase != where["state"] or m != where["m"]:
        where["since"] = now
    where.update(state=phase, m=m, name=name)
    if phase == "compiling":
        where["last_compiled"] = {"m": m, "name": name, "t": now}
    elif phase == "executing":
        where["last_executed"] = {"m": m, "name": name, "t": now}
    data = dict(where, v=1, pid=os.getpid(), process=state["process"], t=now)
    try:
        text = json.dumps(data, separators=(",", ":"), default=str).encode()[: STATUS_BYTES - 1]
        os.pwrite(fd, text.ljust(STATUS_BYTES - 1) + b"\n", 0)
    except (OSError, ValueError, TypeError):
        pass


def rusage():
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"maxrss_kb": usage.ru_maxrss, "utime": round(usage.ru_utime, 6), "stime": round(usage.ru_stime, 6)}


def thread_state():
    import threading

    if "tls" not in state:
        state["tls"] = threading.local()
    return state["tls"]


def describe(exc):
    text = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, text[0][:300] if text else "")


def flush(module):
    if module.wall:
        event("calls", m=module.m, first=module.first, wall=module.wall, cpu=module.cpu)
        module.first += len(module.wall)
        module.wall, module.cpu = [], []


def open_files(pid):
    folder = state["dir"]
    state["events"] = os.open(
        os.path.join(folder, "%d.events.jsonl" % pid), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644
    )
    state["status"] = os.open(
        os.path.join(folder, "%d.status.json" % pid), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644
    )
    event(
        "start",
        v=1,
        pid=pid,
        ppid=os.getppid(),
        process=state["process"],
        python="%d.%d.%d" % sys.version_info[:3],
        measure_calls=state["budget"],
    )
    status("python")


def in_forked_child():
    """A forked child writes its own files; what the parent measured stays the parent's to write."""
    for key in ("events", "status"):
        try:
            os.close(state[key])
        except (OSError, TypeError):
            pass
        state[key] = None
    for module in modules.values():
        module.wall, module.cpu, module.untimed = [], [], 0
    untimed.clear()
    try:
        open_files(os.getpid())
    except OSError:
        pass


def register(key, module):
    """`module` for the executable whose id is `key`. An id seen before belonged to an executable that is
    gone (Python reuses the address): that module's timed calls are written out first."""
    old = modules.get(key)
    if old is not None:
        flush(old)
        if old.untimed:
            untimed[str(old.m)] = old.untimed
    modules[key] = module
    return module


def at_exit():
    for module in list(modules.values()):
        flush(module)
    counts = dict(untimed, **{str(m.m): m.untimed for m in modules.values() if m.untimed})
    if counts:
        event("untimed", counts=counts)
    event("end", **rusage())


def start(folder, budget):
    """Open this process's files and write `start`; flush what is left at Python's normal exit."""
    import atexit

    state["dir"], state["budget"] = folder, budget
    process = os.environ.get("JAX_PROCESS_ID", "")
    state["process"] = int(process) if process.isdigit() else None
    open_files(os.getpid())
    atexit.register(at_exit)  # registered before jax's: it runs after them
    os.register_at_fork(after_in_child=in_forked_child)
