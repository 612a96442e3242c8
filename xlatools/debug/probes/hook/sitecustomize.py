"""xlatools' hook in the program's interpreter (found first on PYTHONPATH as `sitecustomize`).

Standalone: runs in the TARGET interpreter at start-up, before the program, and imports
nothing of xlatools. It takes its settings out of the environment (so the program and its
children see the environment they were given), restores PYTHONPATH, and then:

- crash mode (XLATOOLS_CRASH_TRACE=FILE): a fatal signal (SIGSEGV, SIGABRT, SIGFPE, SIGBUS,
  SIGILL) makes faulthandler write the Python traceback into a pipe, and the crashing thread
  then waits in libc's sleep() (signal number seconds; the disposition is reset first, so the
  process still dies by the same signal). A watcher spawned here (a shell waiting in `read`,
  which becomes crash_watcher.py when the report comes) attaches gdb to the still-living program,
  writes FILE (every thread's native frames plus the Python traceback) and ends the program with
  its signal. The normal path pays this start-up (about 1-2 ms: _ctypes, five sigaction calls,
  one posix_spawn of a shell); the watcher sleeps in read() until the program exits.
- stack mode (XLATOOLS_PYSTACK_FILE=FILE, XLATOOLS_PYSTACK_SIGNAL=N): faulthandler dumps every
  Python thread's stack into FILE when signal N arrives (`xlatools debug` sends it at a
  breakpoint) and on a fatal signal.
Finally the sitecustomize that ours shadows (Debian's, a venv's) is imported as usual.
"""

import os
import sys

_SETTINGS = (
    "XLATOOLS_HOOK_DIR",
    "XLATOOLS_HOOK_PYTHONPATH",
    "XLATOOLS_CRASH_TRACE",
    "XLATOOLS_CRASH_GDB",
    "XLATOOLS_CRASH_WATCHER_SHELL",
    "XLATOOLS_PYSTACK_FILE",
    "XLATOOLS_PYSTACK_SIGNAL",
)
_FATAL = ("SIGSEGV", "SIGABRT", "SIGFPE", "SIGBUS", "SIGILL")
_SA_NODEFER, _SA_RESETHAND = 0x40000000, 0x80000000
_PR_SET_PTRACER = 0x59616D61
# The watcher waits in a shell (about 1 ms of CPU; a Python's start-up is about 8, and on a busy
# machine the program feels it): a report's first line wakes it, and it becomes the Python watcher,
# handing that line on. XLATOOLS_CRASH_WATCHER_SHELL names another shell, or (empty) none.
_SHELL = "/bin/sh"
_WAIT_THEN_WATCH = 'IFS= read -r first || exit 0; exec "$0" "$@" "$first"'
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


def _libc_call(libc, name, *args):
    """Call a libc function by name: ints, bytes (as a pointer to them) and None (NULL) in, an int out."""
    import _ctypes

    return _ctypes.call_function(_ctypes.dlsym(libc, name), args)


def _sleep_on_fatal_signals():
    """libc's sleep() as the handler of each fatal signal, reset to the default on entry.

    Through _ctypes itself: the ctypes package costs ~3 ms of start-up in every program; this, ~0.5."""
    import _ctypes
    import _signal

    libc = _ctypes.dlopen(None, 2)  # RTLD_NOW: the program itself, libc included
    # glibc's struct sigaction (x86-64, aarch64): handler, a 128-byte mask, int flags (+4 padding), restorer.
    action = (
        _ctypes.dlsym(libc, "sleep").to_bytes(8, "little")
        + bytes(128)
        + (_SA_RESETHAND | _SA_NODEFER).to_bytes(4, "little")
        + bytes(12)
    )
    for name in _FATAL:
        _libc_call(libc, "sigaction", getattr(_signal, name), action, None)
    return libc


def _crash_mode(dest, gdb, shell):
    import faulthandler

    read_end, write_end = os.pipe()
    # The watcher reads the pipe on its stdin. Spawned, not forked (a fork's copy-on-write faults cost
    # the program ~4 ms of CPU); the program's own environment, our settings gone.
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_watcher.py")
    argv = [sys.executable, "-I", "-S", script, str(os.getpid()), dest, gdb or ""]
    if shell and os.path.exists(shell):
        argv = [shell, "-c", _WAIT_THEN_WATCH] + argv
    watcher = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0)])
    os.close(read_end)
    faulthandler.disable()  # PYTHONFAULTHANDLER's handler would otherwise sit above ours, unchained
    libc = _sleep_on_fatal_signals()  # also without gdb: the watcher copies the report before the end
    if gdb:
        # Yama (ptrace_scope 1): the watcher and its children (gdb) may attach to us.
        _libc_call(libc, "prctl", _PR_SET_PTRACER, watcher, 0, 0, 0)
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
        import _signal

        faulthandler.disable()
        for name in _FATAL:
            _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
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
    me = sys.modules.pop("sitecustomize", None)
    try:
        __import__("sitecustomize")
    except ImportError:
        sys.modules["sitecustomize"] = me


def _main():
    settings = _take_settings()
    try:
        if settings["XLATOOLS_CRASH_TRACE"]:
            shell = settings["XLATOOLS_CRASH_WATCHER_SHELL"]
            _crash_mode(
                settings["XLATOOLS_CRASH_TRACE"],
                settings["XLATOOLS_CRASH_GDB"] or None,
                _SHELL if shell is None else shell,
            )
        if settings["XLATOOLS_PYSTACK_FILE"]:
            _stack_mode(settings["XLATOOLS_PYSTACK_FILE"], int(settings["XLATOOLS_PYSTACK_SIGNAL"]))
    except Exception as exc:  # never stop the program because of us
        sys.stderr.write("xlatools: crash capture is off in this run (%s: %s)\n" % (type(exc).__name__, exc))
    _chain_shadowed()


_main()
