"""Where a stuck process is, from its stacks (pure), and which process of a group is the odd one out.

A process is `compiling` (a thread in XLA's compiler; then which part: the HLO pass pipeline and its
pass, an emitter, MLIR or LLVM passes), `executing` (a thread running an executable; `collective` names
the collective it waits in), or in `python` (the main thread's innermost Python line).
"""

from __future__ import annotations

from dataclasses import dataclass

from xlatools.records.hang import ModuleSeen, StuckProcess
from xlatools.run.hang.stacks import (
    EMITTER,
    IDLE,
    LLVM_CODEGEN,
    MLIR_PASSES,
    NOT_A_PASS,
    PASS_RUN,
    WAITS,
    COLLECTIVE,
    COMPILE,
    EXECUTE,
    Thread,
)

PHASES = {
    "hlo-passes": "XLA's HLO pass pipeline",
    "emitter": "XLA's emitter",
    "mlir": "MLIR passes",
    "llvm": "LLVM",
    "compiler": "XLA's compiler",
}


@dataclass
class Located:
    state: str
    where: str
    collective: str | None = None
    phase: str | None = None
    compiling: str | None = None  # the module being compiled, from the compile call's locals


def _compile_depth(thread: Thread) -> int:
    """Frames inside the compile call: 0 for a thread that only waits for a compile running elsewhere."""
    hits = [i for i, f in enumerate(thread.frames) if f.kind == "C" and COMPILE.search(f.function)]
    if not hits:
        return 0
    inside = thread.frames[hits[0] + 1 :]
    if any(WAITS.search(f.function) for f in inside) or (inside and IDLE.search(inside[-1].function)):
        return 0
    return len(inside)


def compile_phase(thread: Thread) -> tuple[str, str]:
    """(phase, frames in words) of a thread inside XLA's compiler: the innermost frame that tells decides."""
    frames = thread.frames
    for index in range(len(frames) - 1, -1, -1):
        name = frames[index].name
        inner = [f.name for f in frames[index + 1 :] if f.name.startswith("xla::")]
        if len(inner) > 3:
            inner = [inner[0], "...", *inner[-2:]]
        tail = "".join(f" > {n}" for n in inner)
        if LLVM_CODEGEN.match(name):
            return "llvm", name + tail
        if MLIR_PASSES.match(name):
            return "mlir", name + tail
        run = PASS_RUN.match(name)
        if run and run.group(1) not in NOT_A_PASS:
            return "hlo-passes", f"pass {run.group(1)} ({name}{tail})"
        if name.startswith("xla::") and EMITTER.search(name):
            return "emitter", name + tail
    inner = [f.name for f in frames if f.name.startswith("xla::")][-3:]
    return "compiler", " > ".join(inner) or "no XLA frame"


def _python_where(threads: list[Thread]) -> str:
    for thread in threads:  # the main thread comes first in pystack's report
        frame = thread.innermost("Python")
        if frame is not None:
            return frame.where()
    return "no Python frame"


def _collective(threads: list[Thread]) -> str | None:
    """The collective a thread that runs an executable waits in (a transport's own loop thread does not
    count): its outermost XLA collective frame and the library call inside it."""
    for thread in threads:
        if not thread.matches(EXECUTE):
            continue
        hits = [f for f in thread.matches(COLLECTIVE) if f.kind == "C"]
        if hits:
            outer = next((f.name for f in hits if f.name.startswith("xla::")), hits[0].name)
            call = next((f.name for f in hits if not f.name.startswith("xla::") and COLLECTIVE.search(f.name)), None)
            return outer + (f" > {call}" if call and call != outer else "")
    python = [f for t in threads for f in t.matches(COLLECTIVE) if f.kind == "Python"]
    return python[-1].where() if python else None


def locate(native: list[Thread], python: list[Thread]) -> Located:
    """Where one process is: `native` from `pystack --native-all`, `python` from `pystack --locals`."""
    threads = native or python
    names = [value for thread in python for key, value in thread.locals if key == "module_name"]
    compiling = [t for t in threads if t.matches(COMPILE)]
    if compiling:
        worker = max(compiling, key=_compile_depth)
        phase, frames = compile_phase(worker)
        module = names[-1] if names else None
        head = f"compiling {module}" if module else "compiling"
        return Located("compiling", f"{head}: in {PHASES[phase]}: {frames}", phase=phase, compiling=module)
    named = _collective(threads)
    if named is not None or any(t.matches(EXECUTE) for t in threads):
        where = f"executing, in a collective ({named})" if named else "executing"
        return Located("executing", f"{where}; Python at {_python_where(python or threads)}", collective=named)
    return Located("python", f"in Python at {_python_where(python or threads)}")


def odd_one_out(processes: list[StuckProcess]) -> tuple[list[int], str]:
    """(pids of the odd ones out, one line): a process not in the collective the others wait in; else one
    behind by compiles or executions (the observer's counts); else where every process is."""
    known = [p for p in processes if p.state != "unknown"]
    label = {p.pid: _label(p) for p in processes}
    waiting = [p for p in known if p.collective]
    others = [p for p in known if not p.collective]
    if len(processes) > 1 and waiting and others:
        into = waiting[0].collective
        who = ", ".join(label[p.pid] for p in waiting)
        odd = "; ".join(f"{label[p.pid]} is not: {p.where}" for p in others)
        return [p.pid for p in others], f"{who} wait{'s' if len(waiting) == 1 else ''} in a collective ({into}); {odd}"
    behind = _behind(known)
    if behind:
        return behind
    if len(processes) == 1:
        only = processes[0]
        return [], f"{label[only.pid]}: {only.where or only.error or 'stacks not read'}"
    if len(known) == len(processes) and len({p.where for p in known}) == 1:
        return [], f"every process is at the same place: {known[0].where}"
    return [], "; ".join(f"{label[p.pid]}: {p.where or p.error or 'stacks not read'}" for p in processes)


def _behind(known: list[StuckProcess]) -> tuple[list[int], str] | None:
    for what, count in (("executions", lambda p: p.executions), ("compiles", _compiles)):
        counts: dict[int, int] = {}
        for p in known:
            value = count(p)
            if value is not None:
                counts[p.pid] = value
        if len(counts) > 1 and len(set(counts.values())) > 1:
            most = max(counts.values())
            late = [p for p in known if p.pid in counts and counts[p.pid] < most]
            text = "; ".join(f"{_label(p)} is behind: {counts[p.pid]} {what}, the others up to {most}" for p in late)
            return [p.pid for p in late], text + "; " + "; ".join(f"{_label(p)}: {p.where}" for p in late)
    return None


def _compiles(process: StuckProcess) -> int | None:
    seen: ModuleSeen | None = process.last_compiled
    return seen.m if seen is not None and seen.source == "observer" else None


def _label(process: StuckProcess) -> str:
    return f"process {process.process} (pid {process.pid})" if process.process is not None else f"pid {process.pid}"
