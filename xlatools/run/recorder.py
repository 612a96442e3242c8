"""Real arguments where the target writes no snapshots: xlatools records each executed module's
arguments and results itself (probes/recorder/sitecustomize.py, in the program's interpreter) and
matches every recording to the dump's module, as `<bundle>/recorded/module_NNNN.<name>.snapshot.<n>.pb`
(an HloSnapshot, as XLA writes them): replay, packs, isolation and reduction read them as snapshots
and name their input source `recorded`.

On by default where it is needed (--xla_dump_hlo_snapshots on a GPU backend, which writes none);
`run --record-inputs` asks for it anywhere (on the CPU: to test it against XLA's own snapshots)."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from xlatools.run.dump_expect import SNAPSHOT_FLAG

HOOK_DIR = Path(__file__).resolve().parent / "probes" / "recorder"
FOLDER = "recorded"  # in the bundle, beside xla_dump/
MAX_BYTES = 1 << 30  # of arguments per run (XLATOOLS_RECORD_MAX_BYTES overrides)


def wanted(asked: bool, xla_flags: list[str], backend: str | None) -> bool:
    """Record when asked, or when snapshots are asked of a backend that writes none (a GPU)."""
    snapshots = any(flag.split("=", 1)[0] == SNAPSHOT_FLAG for flag in xla_flags)
    return asked or (snapshots and (backend or "cpu") not in ("cpu", "interpreter"))


def recorder_env(env: dict[str, str], bundle: Path) -> dict[str, str]:
    """`env` with the recorder first on PYTHONPATH (it restores PYTHONPATH itself) and its settings."""
    out = dict(env)
    out["XLATOOLS_RECORD_DIR"] = str(Path(bundle).resolve() / FOLDER)
    out["XLATOOLS_RECORD_PYTHONPATH"] = env.get("PYTHONPATH", "")
    out["XLATOOLS_RECORD_MAX_BYTES"] = env.get("XLATOOLS_RECORD_MAX_BYTES", str(MAX_BYTES))
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOK_DIR), env.get("PYTHONPATH", "")) if p)
    return out


@dataclass
class Recorded:
    """What the recorder left, matched to the dump: notes for the manifest."""

    matched: dict[str, str] = field(default_factory=dict)  # snapshot file (relative to the bundle) -> module label
    notes: list[str] = field(default_factory=list)


def _entries(folder: Path) -> list[dict]:  # index.jsonl lines: the target-side recorder writes them untyped
    try:
        lines = (folder / "index.jsonl").read_text().splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _fingerprint(path: Path) -> str | None:
    from xlatools.run.hlo_canon import fingerprint

    try:
        return fingerprint(path.read_text())
    except (OSError, UnicodeDecodeError):
        return None


def adopt(bundle: Path, dump_root: Path | None) -> Recorded:
    """Give each recording the name of the dump module it ran (same name; among several, the same
    canonical optimised HLO; else the first not yet taken) and say what could not be recorded."""
    from xlatools.run.dumps import index_dump

    folder, found = Path(bundle) / FOLDER, Recorded()
    entries = _entries(folder)
    if not entries:
        if folder.is_dir():
            found.notes.append("--record-inputs: no module was executed through jit, nothing was recorded")
        return found
    modules = (
        sorted(index_dump(dump_root).modules.values(), key=lambda m: m.id) if dump_root and dump_root.is_dir() else []
    )
    taken: set[int] = set()
    for entry in entries:
        name = str(entry.get("name", "?"))
        if entry.get("skipped") or not entry.get("snapshot"):
            found.notes.append(f"inputs of {name} were not recorded: {entry.get('skipped', 'no snapshot written')}")
            continue
        candidates = [m for m in modules if m.name == name and m.id not in taken]
        if len(candidates) > 1 and entry.get("hlo") and dump_root is not None:
            mine = _fingerprint(folder / entry["hlo"])
            same = [m for m in candidates if m.after_file and _fingerprint(dump_root / m.after_file) == mine]
            candidates = same or candidates
        source = folder / entry["snapshot"]
        if not candidates:
            found.notes.append(f"recorded inputs of {name} match no module of the dump (kept as {source.name})")
            continue
        module = candidates[0]
        taken.add(module.id)
        target = folder / f"module_{module.id:04d}.{module.name}.snapshot.{entry.get('n', 0)}.pb"
        os.replace(source, target)
        found.matched[str(target.relative_to(bundle))] = f"{module.id:04d} {module.name}"
    if found.matched:
        found.notes.insert(
            0,
            f"recorded the arguments and results of {len(found.matched)} module(s) in {FOLDER}/ "
            "(replay reads them as the modules' snapshots)",
        )
    return found


@contextlib.contextmanager
def no_partial_files(bundle: Path) -> Iterator[None]:
    """When the block ends, the recorder's half-written files are removed (`*.tmp`: the program was stopped, or
    the disk filled, mid-write)."""
    try:
        yield
    finally:
        for partial in (Path(bundle) / FOLDER).glob("*.tmp"):
            try:
                partial.unlink()
            except OSError:
                pass


def recorded_snapshot(dump_root: Path, stem: str) -> Path | None:
    """The recorded snapshot of the dump module `stem` (module_NNNN.<name>), when its run recorded one."""
    folder = dump_root.parent / FOLDER
    if dump_root.name != "xla_dump" or not folder.is_dir():
        return None
    found = sorted(folder.glob(f"{stem}.snapshot.*.pb"))
    return found[0] if found else None
