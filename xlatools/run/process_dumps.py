"""Per-process dumps of multi-process runs (`run --processes N`): `xla_dump/p0/`, `xla_dump/p1/`, ...

XLA names dump files without a process index, so each process dumps into its own folder. Readers
(inspect, diff, report, replay) address one process's dump: a bundle or its xla_dump/ means process 0
unless `--process N` says otherwise; `BUNDLE/xla_dump/pN` names process N itself and keeps its
bundle's record. A module compiled for several devices cannot be replayed alone: replay refuses it
(replay/refusals.py), naming the processes of the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.hlo.dump_names import PROCESS_FOLDER


@dataclass(frozen=True)
class DumpChoice:
    """Which dump a reader reads: the folder, the bundle it belongs to, and which process of how many."""

    root: Path
    bundle: Path | None
    process: int | None  # None: a one-process dump
    processes: int = 1

    @property
    def note(self) -> str | None:
        if self.process is None:
            return None
        return (
            f"process {self.process} of {self.processes} (a multi-process run; --process N or "
            f"xla_dump/pN picks another)"
        )


def process_dirs(dump_root: Path) -> dict[int, Path]:
    """The per-process folders of a dump root ({} when it is a one-process dump)."""
    if not dump_root.is_dir():
        return {}
    found = {int(m[1]): p for p in dump_root.iterdir() if p.is_dir() and (m := PROCESS_FOLDER.match(p.name))}
    return dict(sorted(found.items()))


def _bundle_of(folder: Path) -> Path | None:
    return folder if (folder / "manifest.json").is_file() else None


def choose_dump(path: Path, process: int | None = None) -> DumpChoice:
    """The dump at `path` (a bundle, `latest`, an xla_dump/ folder, `xla_dump/pN` or a plain dump
    folder), with `process` picking a process of a multi-process run (default 0)."""
    from xlatools.run.dumps import resolve_dump_dir

    path = Path(path).expanduser()
    own = PROCESS_FOLDER.match(path.name)
    if own and path.is_dir() and path.parent.name == "xla_dump":
        if process is not None and process != int(own[1]):
            raise UsageError(f"--process {process} and {path} (process {own[1]}) disagree", hint="give one of them")
        siblings = process_dirs(path.parent)
        return DumpChoice(resolve_dump_dir(path), _bundle_of(path.parent.parent), int(own[1]), len(siblings))
    bundle = _bundle_of(path) if path.is_dir() else None
    root = path / "xla_dump" if bundle is not None and (path / "xla_dump").is_dir() else path
    folders = process_dirs(root) if root.is_dir() else {}
    if not folders:
        if process is not None:
            raise UsageError(
                f"--process {process}: {path} is not a multi-process run (its dump has no p0/, p1/, ...)",
                hint="leave --process out",
            )
        return DumpChoice(resolve_dump_dir(path), bundle, None)  # a dump folder alone stays alone, as always
    chosen = 0 if process is None else process
    if chosen not in folders:
        raise UsageError(
            f"--process {chosen}: {path} has dumps of processes {', '.join(map(str, folders))}",
            hint=f"pick one of them, e.g. --process {next(iter(folders))}",
        )
    return DumpChoice(folders[chosen], bundle or _bundle_of(root.parent), chosen, len(folders))


def process_of(path: Path) -> tuple[int, int] | None:
    """(process, how many processes) when `path` lies in a per-process dump folder `xla_dump/pN/` (or in a
    module folder there); None otherwise."""
    for folder in (path.parent, path.parent.parent):
        own = PROCESS_FOLDER.match(folder.name)
        if own and folder.parent.name == "xla_dump":
            return int(own[1]), len(process_dirs(folder.parent))
    return None


def differing_modules(folders: dict[int, Path]) -> list[str]:
    """Modules whose before-optimisation HLO is not the same in every process (or missing in some):
    an SPMD program compiles the same modules everywhere, so these are worth a look."""
    from xlatools.fsutil import sha256_file
    from xlatools.run.dumps import index_dump

    per_process = []
    for root in folders.values():
        index = index_dump(root)
        per_process.append(
            {
                f"{m.id:04d} {m.name}": sha256_file(root / m.before_file) if m.before_file else None
                for m in index.modules.values()
            }
        )
    keys = set().union(*per_process) if per_process else set()
    return sorted(key for key in keys if len({digests.get(key, "missing") for digests in per_process}) > 1)


def process_rows(bundle: Path | None) -> list:
    """The manifest's processes (records.run.ProcessRecord) of a multi-process run bundle; [] otherwise."""
    if bundle is None:
        return []
    from xlatools.records import read_bundle
    from xlatools.records.run import RUN_KINDS

    record = read_bundle(bundle, kinds=RUN_KINDS)
    return list(getattr(record, "processes", None) or [])


def process_lines(rows: list, choice: DumpChoice) -> list[str]:
    """One line per process for people: status, exit, devices, logs, dump; which failed first."""
    lines = []
    for row in rows:
        marks = [m for m, on in (("failed first", row.first_failure), ("shown", row.id == choice.process)) if on]
        dump = f"; dump {row.dump.dir} ({len(row.dump.modules)} modules)" if row.dump else ""
        gpus = "; " + ", ".join(f"GPU {g.id} {g.kind or '?'}" for g in row.gpus) if getattr(row, "gpus", None) else ""
        lines.append(
            f"process {row.id}: {row.status} ({row.outcome}), {row.devices or '?'} device(s){gpus}; logs "
            f"{row.stdout}, {row.stderr}{dump}{'  <- ' + ', '.join(marks) if marks else ''}"
        )
    return lines
