"""Per-process dumps of multi-process runs (`run --processes N`): `xla_dump/p0/`, `xla_dump/p1/`, ...

XLA names dump files without a process index, so each process dumps into its own folder. Readers
(inspect, diff, report, replay) address one process's dump: a bundle or its xla_dump/ means process 0
unless `--process N` says otherwise; `BUNDLE/xla_dump/pN` names process N itself and keeps its
bundle's record. A module compiled for the devices of several processes (its `num_partitions` x
`replica_count` is more than one process has) cannot be replayed by one process: said, not tried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import EnvironmentMissing, UsageError

PROCESS_DIR = re.compile(r"^p(\d+)$")
_HEADER_COUNT = re.compile(r"\b(num_partitions|replica_count)=(\d+)")


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
        return f"process {self.process} of {self.processes} (a multi-process run; --process N or " \
               f"xla_dump/pN picks another)"


def process_dirs(dump_root: Path) -> dict[int, Path]:
    """The per-process folders of a dump root ({} when it is a one-process dump)."""
    if not dump_root.is_dir():
        return {}
    found = {int(m[1]): p for p in dump_root.iterdir() if p.is_dir() and (m := PROCESS_DIR.match(p.name))}
    return dict(sorted(found.items()))


def _bundle_of(folder: Path) -> Path | None:
    return folder if (folder / "manifest.json").is_file() else None


def choose_dump(path: Path, process: int | None = None) -> DumpChoice:
    """The dump at `path` (a bundle, `latest`, an xla_dump/ folder, `xla_dump/pN` or a plain dump
    folder), with `process` picking a process of a multi-process run (default 0)."""
    from xlatools.run.dumps import resolve_dump_dir

    path = Path(path).expanduser()
    own = PROCESS_DIR.match(path.name)
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
            raise UsageError(f"--process {process}: {path} is not a multi-process run (its dump has no p0/, p1/, ...)",
                             hint="leave --process out")
        return DumpChoice(resolve_dump_dir(path), bundle, None)  # a dump folder alone stays alone, as always
    chosen = 0 if process is None else process
    if chosen not in folders:
        raise UsageError(f"--process {chosen}: {path} has dumps of processes {', '.join(map(str, folders))}",
                         hint=f"pick one of them, e.g. --process {next(iter(folders))}")
    return DumpChoice(folders[chosen], bundle or _bundle_of(root.parent), chosen, len(folders))


def devices_needed(before_file: Path) -> int:
    """num_partitions x replica_count from an HLO module's header line (1 when absent)."""
    try:
        with open(before_file, encoding="utf-8", errors="replace") as handle:
            header = next((line for line in handle if line.startswith("HloModule")), "")
    except OSError:
        return 1
    counts = {name: int(value) for name, value in _HEADER_COUNT.findall(header)}
    return counts.get("num_partitions", 1) * counts.get("replica_count", 1)


def group_module_reason(choice: DumpChoice, before_file: Path | None, devices_per_process: int | None) -> str | None:
    """Why one process cannot replay this module of a per-process dump (None: it can try)."""
    if choice.process is None or before_file is None:
        return None
    needed = devices_needed(before_file)
    local = devices_per_process or 1
    if needed <= local:
        return None
    return (f"it was compiled for {needed} devices across the {choice.processes} processes of a multi-process run "
            f"(num_partitions x replica_count = {needed}; {local} per process), and a replay runs one process")


def refuse_group_modules(choice: DumpChoice, modules: list, explicit: bool, devices_per_process: int | None) -> list:
    """Modules (replay.sources.ModuleSource) one process can replay. A module asked for by name that needs
    several processes is refused (exit 3, cannot run here); others are left out, and when none is left,
    that is refused too."""
    kept, refused = [], []
    for module in modules:
        reason = group_module_reason(choice, module.text, devices_per_process)
        (refused if reason else kept).append((module, reason))
    if refused and (explicit or not kept):
        module, reason = refused[0]
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise EnvironmentMissing(
            f"cannot replay module {module.label}{more} alone: {reason}",
            hint=f"reproduce it with the program: xlatools run --processes {choice.processes} PROGRAM "
                 "(its bundle keeps every process's dump and logs)")
    return [module for module, _ in kept]


def differing_modules(folders: dict[int, Path]) -> list[str]:
    """Modules whose before-optimisation HLO is not the same in every process (or missing in some):
    an SPMD program compiles the same modules everywhere, so these are worth a look."""
    from xlatools.fsutil import sha256_file
    from xlatools.run.dumps import index_dump

    per_process = []
    for root in folders.values():
        index = index_dump(root)
        per_process.append({f"{m.id:04d} {m.name}": sha256_file(root / m.before_file) if m.before_file else None
                            for m in index.modules.values()})
    keys = set().union(*per_process) if per_process else set()
    return sorted(key for key in keys if len({digests.get(key, "missing") for digests in per_process}) > 1)


def process_rows(bundle: Path | None) -> list:
    """The manifest's processes (records.run.ProcessRecord) of a multi-process run bundle; [] otherwise."""
    if bundle is None:
        return []
    from xlatools.records import read_bundle

    record = read_bundle(bundle, kinds=("run",))
    return list(getattr(record, "processes", None) or [])


def process_lines(rows: list, choice: DumpChoice) -> list[str]:
    """One line per process for people: status, exit, devices, logs, dump; which failed first."""
    lines = []
    for row in rows:
        marks = [m for m, on in (("failed first", row.first_failure), ("shown", row.id == choice.process)) if on]
        dump = f"; dump {row.dump.dir} ({len(row.dump.modules)} modules)" if row.dump else ""
        lines.append(f"process {row.id}: {row.status} ({row.outcome}), {row.devices or '?'} device(s); logs "
                     f"{row.stdout}, {row.stderr}{dump}{'  <- ' + ', '.join(marks) if marks else ''}")
    return lines


def devices_of(rows: list, process: int | None) -> int | None:
    return next((row.devices for row in rows if row.id == process), None)
