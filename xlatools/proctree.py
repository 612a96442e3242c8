"""Process trees: stop a child and everything it started, treat SIGTERM like Ctrl-C, and hold both off
while a child is started or stopped.

Shared by runs (the program under test) and local builds (build.py, bazel client):
a child runs in its own session, so its process group can be signalled whole;
descendants that left the group are found by psutil (imported when first needed, never at
start-up: a run that ends by itself never pays for it).

A child in a session of its own does not get the terminal's Ctrl-C: whoever started it must stop it. So
starting one and keeping its handle is one step that an interrupt cannot split (`held_interrupts`: the
interrupt waits until the handle is kept, then stops the child as usual), and so is stopping a tree
(`end_trees`: a second Ctrl-C does not leave it half stopped).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import Callable, Iterator

GRACE_SECONDS = 3.0


def signal_name(returncode: int | None) -> str | None:
    """The signal a child died by, from its Popen return code (-11 -> "SIGSEGV"); None for an exit.
    The one spelling every record, message and verdict uses."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (empty when it is gone)."""
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def alive(pid: int) -> bool:
    """`pid` runs (a zombie is gone, only not reaped)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def signal_tree(pgid: int, extra: list[int], sig: int) -> None:
    """`sig` to the process group `pgid` and to each pid in `extra`; the gone are skipped."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for other in extra:
        try:
            os.kill(other, sig)
        except (ProcessLookupError, PermissionError):
            pass


def end_tree(proc: subprocess.Popen, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the child's whole tree, then SIGKILL whatever is left after `grace` seconds.

    The child must have been started with start_new_session=True (its pid is its group)."""
    end_trees([proc], grace)


def end_trees(procs: list[subprocess.Popen], grace: float = GRACE_SECONDS) -> None:
    """end_tree for several children at once: one grace period for all of them, not one each.
    Ctrl-C and SIGTERM wait until every tree is gone (at most `grace` seconds and the SIGKILLs), then go on."""
    with held_interrupts():
        _end_trees(procs, grace)


def _end_trees(procs: list[subprocess.Popen], grace: float) -> None:
    trees = {proc.pid: descendants(proc.pid) for proc in procs}
    for proc in procs:
        signal_tree(proc.pid, trees[proc.pid], signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if all(proc.poll() is not None and not any(alive(p) for p in trees[proc.pid]) for proc in procs):
            break
        time.sleep(0.05)
    for proc in procs:
        signal_tree(proc.pid, sorted(set(trees[proc.pid]) | set(descendants(proc.pid))), signal.SIGKILL)
    for proc in procs:
        proc.wait()


MARK = "XLATOOLS_TREE"  # in a run_captured child's environment, and so in everything it starts


def marked(token: str) -> list[int]:
    """Live processes whose environment carries MARK=token (our own processes are readable):
    the child's descendants, those that left its session and were adopted by init included. On Linux read
    from /proc (no psutil import: every run ends with this search)."""
    if os.path.isdir("/proc/self/task"):
        return _marked_in_proc(f"{MARK}={token}".encode())
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARK) == token and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:  # gone, or another user's
            continue
    return found


def _marked_in_proc(needle: bytes) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[-1].split()[:1] == [b"Z"]:
                    continue  # a zombie: gone, only not reaped
        except OSError:  # gone, or another user's
            continue
        found.append(int(entry))
    return found


def end_marked(token: str) -> None:
    """SIGKILL every live process carrying MARK=token (`marker()`): what children started with it left running
    once they ended, daemons in sessions of their own included."""
    for pid in marked(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@contextlib.contextmanager
def leaving_nothing(
    env: dict[str, str], on_start: Callable | None = None
) -> Iterator[tuple[dict[str, str], Callable[[object], None]]]:
    """(`env` with a fresh marker for the children the block starts, `started`): whatever they leave running
    (a daemon in a session of its own) is ended when the block ends, however it ends. `started(popen or
    popens)`, a runner's on_start (it calls `on_start` first), ends it as soon as all of them have exited,
    so that a daemon holding their pipes does not keep the runner waiting on them."""
    import threading

    token = marker()

    def after(procs: list[subprocess.Popen]) -> None:
        for proc in procs:
            proc.wait()  # Popen.wait may be called from several threads
        end_marked(token)

    def started(popens: object) -> None:
        if on_start is not None:
            on_start(popens)
        procs = list(popens) if isinstance(popens, (list, tuple)) else [popens]
        threading.Thread(target=after, args=(procs,), daemon=True).start()

    try:
        yield {**env, MARK: token}, started
    finally:
        end_marked(token)


def marker() -> str:
    """A fresh token for MARK: put `{MARK: token}` in the environment of children whose leftovers `end_marked` ends."""
    return os.urandom(8).hex()  # as secrets.token_hex(8), without that module's imports on the run path


def run_captured(
    argv: list[str],
    *,
    timeout: float | None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    grace: float = 1.0,
    sweep: bool = True,
    alive: Callable[[], bool] | None = None,
    alive_within: float | None = None,
) -> subprocess.CompletedProcess:
    """`subprocess.run(argv, capture_output=True, text=True, timeout=...)` for a child that may start
    children of its own (a target interpreter, its probe): the child gets its own session, and on a
    timeout, Ctrl-C or SIGTERM its whole tree is stopped before the exception goes on; whatever it left
    running when it ended (a daemon that left the session too) is stopped as well, found by a marker
    in its environment. Nothing is left behind. Raises subprocess.TimeoutExpired like run.
    `sweep=False`: no search for what left the session once it ended (a tool polled often, that starts no
    daemons: the search reads every process's environment); its tree is still stopped on a timeout.
    `alive`: a sign of life the child gives early (a file it writes first); without it after `alive_within`
    seconds the child is stopped as on a timeout (TimeoutExpired with that timeout): one that never starts
    is not waited for the whole `timeout`."""
    token = marker()
    env = {**(os.environ if env is None else env), MARK: token}
    proc = None
    try:
        with held_interrupts():  # started and kept as one step: an interrupt now stops it below
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        out, err = _communicate(proc, timeout, alive, alive_within)
    except BaseException:
        if proc is not None:
            end_tree(proc, grace)
            try:
                proc.communicate(timeout=grace)
            except (subprocess.TimeoutExpired, ValueError, OSError):
                pass
        raise
    finally:
        if sweep:
            end_marked(token)  # left behind: nothing of a probe outlives it
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Ctrl-C and SIGTERM that arrive inside the block are noted, not raised, and handed to the handler they
    would have reached (KeyboardInterrupt, as ever) once the block has ended: for the few steps that an interrupt
    must not split (start a child and keep its handle; stop a tree). Blocks nest; the block must be short and
    bounded. Outside the main thread (which gets no signals) and for an ignored signal it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Callable | int] = {}  # a handler, or SIG_DFL
    noted: list[signal.Signals] = []
    holding = [True]

    def note(signum, frame):
        if holding[0]:
            noted.append(signum)
        else:  # arrived while the block was being left: as if it had not been held
            _deliver(signum, previous[signum], frame)

    for sig in _HELD_SIGNALS:
        current = signal.getsignal(sig)
        if current is not None and current is not signal.SIG_IGN:  # None: set outside Python, left alone
            previous[sig] = current
            signal.signal(sig, note)
    try:
        yield
    finally:
        holding[0] = False
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if noted:
            _deliver(noted[0], previous[noted[0]], None)


def _deliver(signum: int, handler, frame) -> None:
    """What `signum` would have done under `handler`: call it, or the default action (the process ends by it)."""
    if callable(handler):
        handler(signum, frame)
    elif handler == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _communicate(
    proc: subprocess.Popen, timeout: float | None, alive: Callable[[], bool] | None, within: float | None
) -> tuple[str, str]:
    if alive is None or within is None or (timeout is not None and within >= timeout):
        return proc.communicate(timeout=timeout)
    started = time.monotonic()
    while True:  # retrying communicate() after its timeout loses no output
        try:
            return proc.communicate(timeout=0.2)
        except subprocess.TimeoutExpired:
            waited = time.monotonic() - started
            if waited >= within and not alive():
                raise subprocess.TimeoutExpired(proc.args, within) from None
            if timeout is not None and waited >= timeout:
                raise subprocess.TimeoutExpired(proc.args, timeout) from None
            if waited >= within:  # alive: the rest of the wait in one call
                return proc.communicate(timeout=None if timeout is None else max(0.0, timeout - waited))


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """CI cancels jobs with SIGTERM: raise KeyboardInterrupt, so clean-up runs exactly as for Ctrl-C.

    Outside the main thread signals cannot be handled; there it does nothing. A SIGTERM handler of Python's
    own is kept (cli.main's raises KeyboardInterrupt and notes the signal; `held_interrupts` holds it)."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread() or callable(signal.getsignal(signal.SIGTERM)):
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
