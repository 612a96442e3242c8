"""A run's metrics for people: one row per compiled module and one line per process (`xlatools inspect`,
the run's summary.txt). Plain data in, rows of text out."""

from __future__ import annotations

import statistics

from xlatools.records.metrics import ModuleMetrics, RunMetrics

HEADER = ("module", "name", "compile s", "temp", "argument", "output", "code", "flops", "calls", "run ms", "min ms")


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _calls(m: ModuleMetrics) -> tuple[str, str, str]:
    """(calls timed, median ms, min ms) of the calls past the warm-up (the warm-up alone if that is all)."""
    if m.calls is None or not m.calls.wall_s:
        return ("-", "-", "-")
    times = m.calls.wall_s[m.calls.warmup :] or m.calls.wall_s
    timed = f"{m.calls.timed}" + (f"+{m.calls.untimed}" if m.calls.untimed else "")
    return (timed, f"{statistics.median(times) * 1e3:.3f}", f"{min(times) * 1e3:.3f}")


def module_rows(metrics: RunMetrics) -> list[tuple[str, ...]]:
    """The header and one row per compiled module, in compile order (process by process)."""
    rows: list[tuple[str, ...]] = [HEADER]
    for m in metrics.modules:
        memory = m.memory
        ref = f"#{m.id}" + (f" p{m.process}" if m.process is not None else "")
        ref += f" ({m.dump_id:04d})" if m.dump_id is not None else ""
        rows.append(
            (
                ref,
                m.name + (" [compile failed]" if m.error else ""),
                _number(m.compile_s),
                _bytes(memory.temp_bytes if memory else None),
                _bytes(memory.argument_bytes if memory else None),
                _bytes(memory.output_bytes if memory else None),
                _bytes(memory.generated_code_bytes if memory else None),
                _number(m.flops),
                *_calls(m),
            )
        )
    return rows


def process_lines(metrics: RunMetrics) -> list[str]:
    """What the run measured, in words: the mode, each process's peak RSS and CPU time, the notes."""
    lines = [f"metrics:   {metrics.mode}"]
    for p in metrics.processes:
        who = f"process {p.process} (pid {p.pid})" if p.process is not None else f"pid {p.pid}"
        end = "" if p.exited else " (did not reach Python's exit: values from its last compile)"
        lines.append(
            f"           {who}: peak RSS {_number(p.peak_rss_mb, 4)} MiB, CPU {_number(p.cpu_s, 4)} s "
            f"(jax {p.jax or '-'}){end}"
        )
    lines += [f"note:      {note}" for note in metrics.notes]
    return lines
