"""Native backtraces of crashed programs: what a run, a replay job or a bisect step adds to its
child's environment so that a death by SIGSEGV, SIGABRT (an XLA CHECK), SIGFPE, SIGBUS or SIGILL
leaves `native-backtrace.txt` (every thread's symbolized frames, plus the Python traceback).

The work happens in the program's interpreter (probes/hook/sitecustomize.py): a watcher process
beside it (probes/hook/crash_watcher.py) attaches gdb only when the program is dying; the normal
path pays the hook's start-up (about 2 ms of the program's CPU, see benchmarks/crash_capture.py
and docs/debugging.md) and nothing else. XLATOOLS_NATIVE_BACKTRACE=0 turns it off.
"""

from __future__ import annotations

import os
from pathlib import Path

from xlatools.debug.gdb import HOOK_DIR, find_gdb

FILE = "native-backtrace.txt"


def hook_env(env: dict[str, str], settings: dict[str, str]) -> dict[str, str]:
    """`env` with our sitecustomize first on PYTHONPATH and `settings` for it; the hook takes them
    out again and restores PYTHONPATH, so the program sees the environment it was given."""
    out = dict(env)
    out["XLATOOLS_HOOK_DIR"] = str(HOOK_DIR)
    out["XLATOOLS_HOOK_PYTHONPATH"] = env.get("PYTHONPATH", "")
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOK_DIR), env.get("PYTHONPATH", "")) if p)
    out.update(settings)
    return out


def with_crash_capture(env: dict[str, str], folder: Path) -> dict[str, str]:
    """The child environment that leaves FILE in `folder` if the program dies by a fatal signal."""
    if env.get("XLATOOLS_NATIVE_BACKTRACE", "1") in ("0", "false", "no", "off"):
        return env
    return hook_env(
        env, {"XLATOOLS_CRASH_TRACE": str(Path(folder).resolve() / FILE), "XLATOOLS_CRASH_GDB": find_gdb(env) or ""}
    )


def backtrace_note(folder: Path) -> str | None:
    """A line for summaries and notes when the program left a native backtrace in `folder`."""
    path = Path(folder) / FILE
    return f"native backtrace of the crash: {path}" if path.is_file() else None


# libc's raise/abort, unnamed frames
_UNTELLING = (
    "__pthread_kill",
    "pthread_kill",
    "__GI_raise",
    "raise ",
    "__GI_abort",
    "abort ",
    "?? ",
)


def crashing_frames(text: str, count: int = 8) -> list[str]:
    """The top native frames of the thread that crashed, from a FILE's gdb part: those below its last
    `<signal handler called>` (above it sits the hook's sleep), without libc's raise/abort and unnamed
    frames, each shortened (for a report's few lines; the file has them all)."""
    import re

    native = text.split("== Python traceback", 1)[0]
    for block in re.split(r"^Thread ", native, flags=re.M)[1:]:
        lines = [line for line in block.splitlines() if re.match(r"#\d+\s", line)]
        marks = [i for i, line in enumerate(lines) if "<signal handler called>" in line]
        if marks:
            break
    else:
        return []
    shown = []
    for line in lines[marks[-1] + 1 :]:
        number, _, rest = line.partition(" ")
        rest = re.sub(r"^\s*0x[0-9a-f]+ in ", "", rest.strip())
        if rest.startswith(_UNTELLING):
            continue
        shown.append(f"{number} " + re.sub(r" from (\S*/)?(\S+)$", r" from \2", rest)[:200])
        if len(shown) == count:
            break
    return shown
