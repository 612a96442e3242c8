"""`xlatools debug` inside gdb: breakpoints at pass entries, one record per stop, the end.

Standalone: runs in gdb's own Python (`gdb -x gdb_session.py`), imports nothing of xlatools.
It reads the session plan (JSON) named by XLATOOLS_GDB_PLAN, runs the program, and at each
stop writes into `stops/N/`: stop.json, backtrace.txt (this thread), threads.txt (every thread),
python-stack.txt (faulthandler's dump, raised in the program by a signal) and module-before.txt
(the newest per-pass dump, i.e. the module the pass receives). A fatal signal writes
native-backtrace.txt. The session's result goes to the plan's `result` file after every change,
so an interactive session that ends in gdb's prompt still leaves it.
"""

import json
import os
import re
import shlex
import shutil
import signal
import time

import gdb

PLAN = json.load(open(os.environ["XLATOOLS_GDB_PLAN"], encoding="utf-8"))
FATAL = ("SIGSEGV", "SIGABRT", "SIGFPE", "SIGBUS", "SIGILL", "SIGTRAP")
# Where a member function finds `this` at its entry: x86-64 passes it in rdi, or in rsi when the
# result is returned through memory (StatusOr<bool> is); aarch64 always in x0.
THIS_REGISTERS = {"i386:x86-64": ("$rsi", "$rdi"), "aarch64": ("$x0",)}
state = {"stops": [], "exit_code": None, "signal": None, "crash": None, "breakpoints": [], "finished": False}
last_event = {}
pending = {}  # a Python stack the program will write when it resumes


def save():
    tmp = PLAN["result"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=2)
    os.replace(tmp, PLAN["result"])


def dynamic_class():
    """The class of the object whose member function just started (from its vtable), or None."""
    try:
        arch = gdb.selected_frame().architecture().name()
    except gdb.error:
        return None
    for register in THIS_REGISTERS.get(arch, ()):
        try:
            vptr = int(gdb.parse_and_eval("*(unsigned long *)%s" % register))
            where = gdb.execute("info symbol %d" % vptr, to_string=True)
        except gdb.error:
            continue
        found = re.match(r"vtable for (.+?) \+ \d+ in section", where)
        if found:
            return found.group(1)
    return None


class PassBreakpoint(gdb.Breakpoint):
    def __init__(self, spec):
        super().__init__(spec["location"])
        self.spec = spec
        self.cls = None

    def stop(self):
        self.cls = dynamic_class()
        wanted = self.spec["classes"]
        # A shared entry (OpExpanderPass::RunImpl): stop only for the wanted classes.
        return not wanted or self.cls is None or self.cls in wanted


def ask_python_stack(destination):
    """Ask the program for faulthandler's dump of every Python thread. The signal is sent to the
    process (no function call in the stopped program: gdb 13 cannot make one on CPUs with AMX
    state) and handled as soon as the program resumes; finish_python_stack() collects it."""
    path = PLAN["pystack_file"]
    pending["stack"] = (destination, os.path.getsize(path) if os.path.exists(path) else 0)
    os.kill(gdb.selected_inferior().pid, PLAN["pystack_signal"])


def finish_python_stack():
    if "stack" not in pending:
        return
    destination, offset = pending.pop("stack")
    with open(PLAN["pystack_file"], "rb") as handle:
        handle.seek(offset)
        text = handle.read().decode("utf-8", "replace")
    with open(destination, "a", encoding="utf-8") as handle:
        handle.write(text or "(the program ended before it could write its Python stack)\n")


def newest_dump(pass_name):
    """The newest per-pass dump that names the pass as the next one: the module it receives."""
    folder = PLAN.get("dump_dir")
    if not folder or not pass_name or not os.path.isdir(folder):
        return None
    suffix = ".before_%s.txt" % pass_name
    candidates = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(suffix)]
    return max(candidates, key=os.path.getmtime) if candidates else None


def write(folder, name, text):
    with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
        handle.write(text)


def wanted_module(module):
    """--hlo-module: stop only while a module of a matching name is compiled (the dump tells which)."""
    pattern = PLAN.get("module_re")
    if not pattern:
        return True
    name = os.path.basename(module).split(".")[1] if module else ""
    return bool(re.search(pattern, name))


def record_stop(bp, module):
    number = len(state["stops"]) + 1
    folder = os.path.join(PLAN["stops_dir"], str(number))
    os.makedirs(folder, exist_ok=True)
    thread = gdb.selected_thread()
    frame = gdb.selected_frame()
    write(folder, "backtrace.txt", gdb.execute("bt", to_string=True))
    write(folder, "threads.txt", gdb.execute("thread apply all bt", to_string=True))
    ask_python_stack(os.path.join(folder, "python-stack.txt"))
    if module:
        shutil.copyfile(module, os.path.join(folder, "module-before.txt"))
    here = os.path.relpath(folder, PLAN["bundle"])
    stop = {
        "number": number,
        "label": bp.spec["label"],
        "pass": bp.spec.get("pass"),
        "class": bp.cls,
        "function": frame.name(),
        "pc": "0x%x" % frame.pc(),
        "thread": thread.num,
        "thread_name": thread.name,
        "module_dump": os.path.basename(module) if module else None,
        "dir": here,
        "backtrace": here + "/backtrace.txt",
        "threads": here + "/threads.txt",
        "python_stack": here + "/python-stack.txt",
        "module_file": here + "/module-before.txt" if module else None,
        "time": time.time(),
    }
    write(folder, "stop.json", json.dumps(stop, indent=2) + "\n")
    state["stops"].append(stop)
    save()
    gdb.write("xlatools: stop %d: %s in %s (%s)\n" % (number, bp.spec["label"], frame.name(), stop["dir"]))


def record_crash(signal_name):
    text = "xlatools native backtrace (%s, under gdb)\n\n== native frames (gdb) ==\n" % signal_name
    text += gdb.execute("info threads", to_string=True) + gdb.execute("thread apply all bt", to_string=True)
    write(PLAN["bundle"], "native-backtrace.txt", text + "\n== Python traceback (faulthandler) ==\n")
    # faulthandler writes it when the program gets the signal back, on the way to its end.
    path = PLAN["pystack_file"]
    pending["stack"] = (
        os.path.join(PLAN["bundle"], "native-backtrace.txt"),
        os.path.getsize(path) if os.path.exists(path) else 0,
    )
    state["crash"] = {"signal": signal_name, "file": "native-backtrace.txt"}
    save()


def on_stop(event):
    last_event["event"] = event


def on_exit(event):
    state["exit_code"] = getattr(event, "exit_code", None)
    if state["exit_code"] is None:
        try:
            state["signal"] = signal.Signals(int(gdb.parse_and_eval("$_exitsignal"))).name
        except (gdb.error, ValueError):
            pass
    state["finished"] = True
    save()


def setup():
    for command in (
        "set pagination off",
        "set confirm off",
        "set width 0",
        "set breakpoint pending on",
        "set print thread-events off",
        "set print inferior-events off",
        "set disable-randomization off",
        "handle SIG%d nostop noprint pass" % PLAN["pystack_signal"],
        "unset environment XLATOOLS_GDB_PLAN",
    ):
        gdb.execute(command, to_string=True)
    for name, value in PLAN["inferior_env"].items():
        gdb.execute("set environment %s=%s" % (name, value), to_string=True)
    for spec in PLAN["breakpoints"]:
        PassBreakpoint(spec)
        state["breakpoints"].append(spec["label"])
    gdb.events.stop.connect(on_stop)
    gdb.events.exited.connect(on_exit)
    save()


def main():
    setup()
    # gdb was given the interpreter only: its arguments (and the redirection) go through the shell.
    words = " ".join(shlex.quote(word) for word in PLAN["argv"][1:])
    redirect = "" if PLAN["interactive"] else " > %s 2> %s" % (shlex.quote(PLAN["stdout"]), shlex.quote(PLAN["stderr"]))
    gdb.execute("run %s%s" % (words, redirect))
    while True:
        finish_python_stack()
        if state["finished"]:
            break
        event = last_event.pop("event", None)
        if isinstance(event, gdb.BreakpointEvent) and isinstance(event.breakpoints[0], PassBreakpoint):
            module = newest_dump(event.breakpoints[0].spec.get("pass"))
            if not wanted_module(module):
                gdb.execute("continue")
                continue
            record_stop(event.breakpoints[0], module)
            if len(state["stops"]) >= PLAN["max_stops"]:
                if PLAN["interactive"]:
                    gdb.write("xlatools: stopped; gdb is yours now (the bundle: %s)\n" % PLAN["bundle"])
                    return
                gdb.execute("delete")
        elif isinstance(event, gdb.SignalEvent) and event.stop_signal in FATAL and state["crash"] is None:
            record_crash(event.stop_signal)
        gdb.execute("continue")
    save()


main()
