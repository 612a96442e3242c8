"""What `xlatools inspect` says of a run that crashed or was stopped stuck: the signal and where (the crashing
thread's top native frames, or a child process's Python stack), and where every process was (docs/hangs.md)."""

from __future__ import annotations

from pathlib import Path

from xlatools.records.run import RunManifest


def crash_lines(bundle: Path, record: RunManifest) -> list[str]:
    """The program's own death by a signal (with its native backtrace's top frames), or a child's."""
    lines: list[str] = []
    if record.signal and str(record.status) not in ("timeout", "interrupted"):  # not the signal that stopped it
        lines.append(f"crash:     the program died by {record.signal}")
        if record.native_backtrace:
            from xlatools.debug.crash import crashing_frames

            path = Path(bundle) / record.native_backtrace
            try:
                frames = crashing_frames(path.read_text(errors="replace"))
            except OSError:
                frames = []
            lines.append(f"           every thread's native frames: {path}")
            lines += [f"           {frame}" for frame in frames[:8]]
    child = record.child_crash
    if child is not None:
        lines.append(f"crash:     a process the program started died by {child.signal} ({child.log}):")
        lines += [f"           {line}" for line in child.traceback[:12] if line.strip()]
    return lines


def stuck_lines(record: RunManifest) -> list[str]:
    """Where each process was when the run was stopped stuck, and the odd one out."""
    stuck = record.stuck
    if stuck is None:
        return []
    lines = [
        f"stuck:     {stuck.reason}; stacks read with {stuck.tool} in {stuck.seconds:.1f} s ({stuck.folder}/)",
        f"           {stuck.summary}",
    ]
    for p in stuck.processes:
        who = f"process {p.process}" if p.process is not None else "process"
        odd = "  <- odd one out" if p.pid in stuck.odd else ""
        lines.append(f"           {who} pid {p.pid}: {p.state}{odd}; {p.file or p.error or '-'}")
        for what, seen in (("last compiled", p.last_compiled), ("last executed", p.last_executed)):
            if seen is not None:
                lines.append(f"             {what}: {seen.name}")
    return lines
