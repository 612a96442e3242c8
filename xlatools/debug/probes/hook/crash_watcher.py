"""xlatools' crash watcher: started by the hook (sitecustomize.py) beside each program, as
`python -I -S crash_watcher.py PID FILE GDB [FIRST-LINE]` with the read end of the report pipe as
stdin (GDB empty: none; FIRST-LINE: the report's first line, when a shell waited for it).

Standalone, in the TARGET interpreter, importing nothing of xlatools. It sleeps in read() until
the program exits (end of file: nothing to do) or faulthandler writes a fatal signal's report
into the pipe. Then the program's crashing thread sleeps in libc's sleep(); the watcher stops
the program, attaches gdb, writes FILE (every thread's native frames plus the Python traceback),
copies the report to the program's stderr (where faulthandler would have written it) and lets
the program die by its own signal.
"""

import os
import sys

FATAL = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Floating point exception": "SIGFPE",
    "Bus error": "SIGBUS",
    "Illegal instruction": "SIGILL",
}
GDB_SECONDS = 180


def gdb_report(gdb, pid):
    import subprocess

    argv = [
        gdb,
        "-nx",
        "-batch",
        "-iex",
        "set auto-load python-scripts off",
        "-p",
        str(pid),
        "-ex",
        "set pagination off",
        "-ex",
        "set width 0",
        "-ex",
        "info threads",
        "-ex",
        "thread apply all bt",
    ]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=GDB_SECONDS
        )
        return "$ " + " ".join(argv) + "\n" + done.stdout.decode("utf-8", "replace").rstrip("\n") + "\n"
    except (OSError, subprocess.SubprocessError) as exc:
        return "gdb could not run: %s\n" % exc


def read_rest(first):
    """The rest of faulthandler's report (it writes it in pieces), once the first piece came."""
    import select

    chunks = [first]
    while select.select([0], [], [], 0.3)[0]:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def record(pid, dest, gdb, report):
    text = report.decode("utf-8", "replace")
    name = next((sig for words, sig in FATAL.items() if "Fatal Python error: " + words in text), None)
    try:
        os.write(2, report)
    except OSError:
        pass
    if gdb:
        native = gdb_report(gdb, pid)
    else:
        native = "gdb was not found when the program started: no native frames (install gdb; see `xlatools doctor`)\n"
    header = "xlatools native backtrace of process %d (%s)\n\n" % (pid, name or "fatal signal")
    body = header + "== native frames (gdb) ==\n" + native + "\n== Python traceback (faulthandler) ==\n" + text
    tmp = "%s.%d.tmp" % (dest, os.getpid())
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(body)
    os.replace(tmp, dest)
    return name


def main(pid, dest, gdb, first=None):
    """`first`: the report's first line, when a shell waited for it (else this reads it)."""
    import signal

    first = os.read(0, 1 << 16) if first is None else (first + "\n").encode("utf-8", "surrogateescape")
    if not first:
        return  # the program ended normally
    report = read_rest(first)  # the crashing thread then sleeps (signal number seconds)
    os.kill(pid, signal.SIGSTOP)  # stopped, it cannot finish dying before gdb has looked at it
    name = None
    try:
        name = record(pid, dest, gdb, report)
    finally:
        for sig in ([getattr(signal, name)] if name else []) + [signal.SIGCONT]:
            try:
                os.kill(pid, sig)  # its own fatal signal, delivered once it runs again
            except OSError:
                pass


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3] or None, sys.argv[4] if len(sys.argv) > 4 else None)
