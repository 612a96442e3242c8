"""The run's observer (issue 38; docs/metrics.md) as a stuck-run capture reads it: `<bundle>/observer/<pid>.status.json`
(where a process is now: the module it compiles or runs, the last it compiled and executed) and `<pid>.events.jsonl`
(what happened, in order: here, how many executions and when the last event was)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from xlatools.records.hang import ModuleSeen

OBSERVER = "observer"  # the observer's files in the bundle


@dataclass
class ObserverStatus:
    """The observer's `<pid>.status.json` (docs/metrics.md), the fields a capture uses."""

    text: str
    state: str | None = None
    current: ModuleSeen | None = None
    last_compiled: ModuleSeen | None = None
    last_executed: ModuleSeen | None = None


def read_observer(bundle: Path, pid: int) -> ObserverStatus | None:
    """The observer's last word on `pid` (None: no observer, or not yet a valid file)."""
    path = Path(bundle) / OBSERVER / f"{pid}.status.json"
    for _ in range(3):  # rewritten in place: a read in the middle of a write is retried
        try:
            text = path.read_text().strip()
            data = json.loads(text)
        except (OSError, ValueError):
            time.sleep(0.02)
            continue
        if not isinstance(data, dict):
            return None
        state = data.get("state") if isinstance(data.get("state"), str) else None
        return ObserverStatus(
            text, state, _seen(data), _seen(data.get("last_compiled")), _seen(data.get("last_executed"))
        )
    return None


def _seen(data: object) -> ModuleSeen | None:
    if isinstance(data, dict) and isinstance(data.get("name"), str):
        m = data.get("m")
        return ModuleSeen(name=data["name"], m=m if isinstance(m, int) else None, source="observer")
    return None


def observer_executions(bundle: Path, pid: int) -> int | None:
    """Calls the observer saw (timed calls, or first executions): None without an events file."""
    try:
        lines = (Path(bundle) / OBSERVER / f"{pid}.events.jsonl").read_text().splitlines()
    except OSError:
        return None
    timed = first = 0
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("ev") == "calls" and isinstance(event.get("wall"), list):
            timed += len(event["wall"])
        elif isinstance(event, dict) and event.get("ev") == "exec_first":
            first += 1
    return max(timed, first)


def last_observer_event(bundle: Path) -> float | None:
    """time.monotonic() of the newest observer event of any process (its events file's change time)."""
    try:
        newest = max((p.stat().st_mtime for p in (Path(bundle) / OBSERVER).glob("*.events.jsonl")), default=None)
    except OSError:
        return None
    return None if newest is None else time.monotonic() - max(0.0, time.time() - newest)
