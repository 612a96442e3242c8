"""xlatools' hook in the program's interpreter (found first on PYTHONPATH as `sitecustomize`).

Standalone: runs in the TARGET interpreter at start-up, before the program, and imports
nothing of xlatools. It takes its settings out of the environment (so the program and its
children see the environment they were given), restores PYTHONPATH, and then:

- crash mode (XLATOOLS_CRASH_TRACE=FILE): a fatal signal (SIGSEGV, SIGABRT, SIGFPE, SIGBUS,
  SIGILL) makes faulthandler write the Python traceback into a pipe, and the crashing thread
  then waits in libc's sleep() (signal number seconds; the disposition is reset first, so the
  process still dies by the same signal). A watcher process forked here reads the pipe, attaches
  gdb to the still-living program, writes FILE (every thread's native frames plus the Python
  traceback) and ends the program with its signal. Nothing runs on the normal path but this
  start-up: the watcher sleeps in read() until the program exits.
- stack mode (XLATOOLS_PYSTACK_FILE=FILE, XLATOOLS_PYSTACK_SIGNAL=N): faulthandler dumps every
  Python thread's stack into FILE when signal N arrives (`xlatools debug` sends it at a
  breakpoint) and on a fatal signal.
Finally the sitecustomize that ours shadows (Debian's, a venv's) is imported as usual.
"""

import os
import sys

_SETTINGS = ("XLATOOLS_HOOK_DIR", "XLATOOLS_HOOK_PYTHONPATH", "XLATOOLS_CRASH_TRACE", "XLATOOLS_CRASH_GDB",
             "XLATOOLS_PYSTACK_FILE", "XLATOOLS_PYSTACK_SIGNAL")
_FATAL = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Floating point exception": "SIGFPE",
          "Bus error": "SIGBUS", "Illegal instruction": "SIGILL"}
_SA_NODEFER, _SA_RESETHAND = 0x40000000, 0x80000000
_PR_SET_PTRACER = 0x59616D61
_GDB_SECONDS = 180
_kept = []  # files faulthandler writes to: they must stay open


def _take_settings():
    settings = {name: os.environ.pop(name, None) for name in _SETTINGS}
    original = settings["XLATOOLS_HOOK_PYTHONPATH"]
    if original:
        os.environ["PYTHONPATH"] = original
    else:
        os.environ.pop("PYTHONPATH", None)
    here = settings["XLATOOLS_HOOK_DIR"]
    if here in sys.path:
        sys.path.remove(here)
    return settings


def _gdb_report(gdb, pid):
    import subprocess

    argv = [gdb, "-nx", "-batch", "-iex", "set auto-load python-scripts off", "-p", str(pid),
            "-ex", "set pagination off", "-ex", "set width 0",
            "-ex", "info threads", "-ex", "thread apply all bt"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=_GDB_SECONDS)
        return "$ " + " ".join(argv) + "\n" + done.stdout.decode("utf-8", "replace").rstrip("\n") + "\n"
    except (OSError, subprocess.SubprocessError) as exc:
        return "gdb could not run: %s\n" % exc


def _read_report(fd):
    import select

    chunks = [os.read(fd, 1 << 16)]
    if not chunks[0]:
        return b""
    while select.select([fd], [], [], 0.3)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _watch(fd, pid, dest, gdb):
    """The watcher: wait for faulthandler's report, then record the native stacks of `pid`."""
    import signal

    python_part = _read_report(fd)
    if not python_part:
        return  # the program ended normally
    # Stopped, the program cannot finish dying (its sleep may end) before gdb has looked at it.
    os.kill(pid, signal.SIGSTOP)
    text = python_part.decode("utf-8", "replace")
    name = next((sig for words, sig in _FATAL.items() if "Fatal Python error: " + words in text), None)
    try:
        try:
            os.write(2, python_part)  # where faulthandler would have written it
        except OSError:
            pass
        if gdb:
            native = _gdb_report(gdb, pid)
        else:
            native = "gdb was not found when the program started: no native frames (install gdb; see `xlatools doctor`)\n"
        header = "xlatools native backtrace of process %d (%s)\n\n" % (pid, name or "fatal signal")
        body = header + "== native frames (gdb) ==\n" + native + "\n== Python traceback (faulthandler) ==\n" + text
        tmp = "%s.%d.tmp" % (dest, os.getpid())
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(body)
        os.replace(tmp, dest)
    finally:
        for sig in ([getattr(signal, name)] if name else []) + [signal.SIGCONT]:
            try:
                os.kill(pid, sig)  # its own fatal signal, delivered once it runs again
            except OSError:
                pass


def _sleep_on_fatal_signals():
    """libc's sleep() as the handler of each fatal signal, reset to the default on entry."""
    import ctypes
    import signal

    class Sigaction(ctypes.Structure):  # glibc's struct sigaction (x86-64, aarch64)
        _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16), ("flags", ctypes.c_int),
                    ("restorer", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    action = Sigaction()
    action.handler = ctypes.cast(libc.sleep, ctypes.c_void_p).value
    action.flags = _SA_RESETHAND | _SA_NODEFER
    for name in _FATAL.values():
        libc.sigaction(int(getattr(signal, name)), ctypes.byref(action), None)
    return libc


def _crash_mode(dest, gdb):
    import faulthandler

    read_end, write_end = os.pipe()
    program = os.getpid()
    watcher = os.fork()
    if watcher == 0:
        try:
            os.close(write_end)
            _watch(read_end, program, dest, gdb)
        finally:
            os._exit(0)
    os.close(read_end)
    faulthandler.disable()  # PYTHONFAULTHANDLER's handler would otherwise sit above ours, unchained
    libc = _sleep_on_fatal_signals()  # also without gdb: the watcher copies the report before the end
    if gdb:
        libc.prctl(_PR_SET_PTRACER, watcher, 0, 0, 0)  # Yama (ptrace_scope 1): the watcher may attach to us
    report = os.fdopen(write_end, "w")
    _kept.append(report)
    original_enable = faulthandler.enable
    original_enable(file=report, all_threads=True)

    def enable(file=None, all_threads=True):
        # A later enable (pytest does one) keeps the report going to the watcher, which copies it to stderr.
        original_enable(file=report, all_threads=all_threads)

    faulthandler.enable = enable

    def in_forked_child():
        # A forked child is not the process the watcher attaches to: it crashes as it would without us.
        import signal

        faulthandler.disable()
        for name in _FATAL.values():
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        report.close()

    os.register_at_fork(after_in_child=in_forked_child)


def _stack_mode(path, signum):
    import faulthandler

    handle = open(path, "a", encoding="utf-8")
    _kept.append(handle)
    faulthandler.enable(file=handle, all_threads=True)  # a crash under gdb: its Python traceback
    faulthandler.register(signum, file=handle, all_threads=True, chain=False)


def _chain_shadowed():
    """Import the sitecustomize ours hides (its folder comes later on sys.path)."""
    import importlib

    me = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        sys.modules["sitecustomize"] = me


def _main():
    settings = _take_settings()
    try:
        if settings["XLATOOLS_CRASH_TRACE"]:
            _crash_mode(settings["XLATOOLS_CRASH_TRACE"], settings["XLATOOLS_CRASH_GDB"] or None)
        if settings["XLATOOLS_PYSTACK_FILE"]:
            _stack_mode(settings["XLATOOLS_PYSTACK_FILE"], int(settings["XLATOOLS_PYSTACK_SIGNAL"]))
    except Exception as exc:  # never stop the program because of us
        sys.stderr.write("xlatools: crash capture is off in this run (%s: %s)\n" % (type(exc).__name__, exc))
    _chain_shadowed()


_main()
