"""The run's observer: its place in the program's environment, and its event files read into `RunMetrics`.

The observer itself runs in the program's interpreter (probes/observer/sitecustomize.py) and writes
`<bundle>/observer/<pid>.events.jsonl` and `<pid>.status.json` (format: docs/metrics.md). Here: the
environment that starts it, and `read_metrics`, which turns the event files into the manifest's record
(every process, every compiled module, matched to the dump's modules where the run dumped).
"""

from __future__ import annotations

import os
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.metrics import ALL_CALLS, DEFAULT_MEASURE_CALLS, ModuleMetrics, ObserverStatus, RunMetrics
from xlatools.run.observer_events import read_events, read_process, read_status

HOOK_DIR = Path(__file__).resolve().parent / "probes" / "observer"
FOLDER = "observer"  # in the bundle


def describe_mode(calls: int) -> str:
    """Which calls a run synchronised and timed, in words (`calls` per executable; ALL_CALLS: every one)."""
    if calls == 0:
        return "no call timed: the program's calls ran asynchronously, as without xlatools"
    if calls == ALL_CALLS:
        return "every call synchronised and timed (jax's fast path off); the first of each executable is warm-up"
    return (
        f"the first {calls} call(s) of each executable synchronised and timed (the first is warm-up); "
        "later calls took jax's fast path, untimed"
    )


def parse_measure_calls(text: str | None) -> int:
    """`--measure-calls N|all`: how many calls of each executable to time (ALL_CALLS for all; None: the default)."""
    if text is None:
        return DEFAULT_MEASURE_CALLS
    value = text.strip().lower()
    if value == "all":
        return ALL_CALLS
    if not value.isdigit():
        raise UsageError(
            f"--measure-calls {text!r}: expected a number of calls (0 or more) or all",
            hint="e.g. --measure-calls 50; 0 times none, all times every call",
        )
    return int(value)


def observer_env(env: dict[str, str], bundle: Path, calls: int, explain: bool = False) -> dict[str, str]:
    """`env` with the observer first on PYTHONPATH (it restores PYTHONPATH itself) and its settings (`explain`:
    it prints each recompile on stderr as it happens)."""
    out = dict(env)
    out["XLATOOLS_OBSERVE_DIR"] = str(Path(bundle).resolve() / FOLDER)
    out["XLATOOLS_OBSERVE_CALLS"] = str(calls)
    if explain:
        out["XLATOOLS_OBSERVE_EXPLAIN"] = "1"
    out["XLATOOLS_OBSERVE_PYTHONPATH"] = env.get("PYTHONPATH", "")
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOK_DIR), env.get("PYTHONPATH", "")) if p)
    return out


def read_metrics(bundle: Path, calls: int, dump_root: Path | None = None) -> RunMetrics:
    """Every process's events under `<bundle>/observer/` as the manifest's record."""
    folder = Path(bundle) / FOLDER
    metrics = RunMetrics(folder=FOLDER, measure_calls=calls, synchronised=calls != 0, mode=describe_mode(calls))
    from xlatools.run.compile_events import read_compile_log, summarise

    processes, logs = [], []
    for path in sorted(folder.glob("*.events.jsonl")):
        events = read_events(path)
        process = read_process(path, metrics.notes, events)
        log = read_compile_log(path, FOLDER, events)
        if process is not None and log is not None:
            processes.append(process)
            logs.append(log)
    metrics.functions, metrics.recompiles = summarise(logs)
    processes.sort(key=lambda p: (p.record.process if p.record.process is not None else -1, p.record.pid))
    metrics.processes = [p.record for p in processes]
    metrics.modules = [m for p in processes for m in sorted(p.modules.values(), key=lambda m: m.id)]
    if not processes:
        metrics.notes.append(
            "metrics: the observer did not start in the program's interpreter (not a Python program, "
            "or one that ignores PYTHONPATH, e.g. python -I or -E)"
        )
    elif not any(p.record.jax for p in processes):
        metrics.notes.append("metrics: the program did not use jax, so no module was observed")
    if dump_root is not None and dump_root.is_dir() and len(processes) == 1:
        _match_dump(metrics.modules, dump_root)
    metrics.notes = list(dict.fromkeys(metrics.notes))
    return metrics


def _match_dump(modules: list[ModuleMetrics], dump_root: Path) -> None:
    """Give each compiled module the dump's id of its module: same name, in compile order (XLA numbers
    the modules it dumps in the order they are made)."""
    from xlatools.run.dumps import index_dump

    by_name: dict[str, list[int]] = {}
    for dumped in sorted(index_dump(dump_root).modules.values(), key=lambda d: d.id):
        by_name.setdefault(dumped.name, []).append(dumped.id)
    for module in modules:
        ids = by_name.get(module.name)
        if ids and module.cache_hit is not True and module.error is None:
            module.dump_id = ids.pop(0)


def read_statuses(bundle: Path) -> list[ObserverStatus]:
    """Where each observed process of a run is now (or was when it ended): for a capture of a stuck run."""
    found = [read_status(path) for path in sorted((Path(bundle) / FOLDER).glob("*.status.json"))]
    return sorted(
        (s for s in found if s is not None), key=lambda s: (s.process if s.process is not None else -1, s.pid)
    )
