"""What to replay: SOURCE (a run bundle, a dump folder or one file) -> ModuleSource list.

A module of a dump is replayed from its StableHLO (what jax handed XLA: module_NNNN.<name>/module.mlir, or
the bundle's jax_ir/ file tied to it, run/jax_ir.py), its before_optimizations HLO text or its .hlo.pb
(jobs.prepare_materials orders them), with the arguments and the recorded result of its first execution
snapshot (or the arguments the run recorded itself) when there is one. One dumped file alone is its module:
the same snapshot, and the run's files (the module's stem) for replay/as_run.py.
after_optimizations text does not recompile (its layouts are final), so it is refused.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xlatools.errors import UsageError
from xlatools.hlo.dump_names import SNAPSHOT_KINDS, DumpKind, parse_dump_name, read_bare_name
from xlatools.replay.helper_modules import is_helper
from xlatools.replay.hloproto import holds_snapshot, is_unoptimized

Kind = Literal["text", "proto", "snapshot", "mlir"]
__all__ = ["ModuleSource", "is_helper", "resolve"]


@dataclass
class ModuleSource:
    name: str
    id: int | None
    text: Path | None = None
    proto: Path | None = None
    snapshot: Path | None = None
    mlir: Path | None = None  # its StableHLO: what jax handed XLA (module_NNNN.<name>/module.mlir or jax_ir/)
    stem: Path | None = None  # <dump>/module_NNNN.<name>: where the run's files of the module are (replay/as_run.py)

    @property
    def run_stem(self) -> Path | None:
        """The module's place in the dump it came from (its stem there), when known."""
        if self.stem is not None:
            return self.stem
        for path, suffix in ((self.text, ".before_optimizations.txt"), (self.proto, ".before_optimizations.hlo.pb")):
            if path is not None and path.name.endswith(suffix):
                return path.with_name(path.name[: -len(suffix)])
        return None

    @property
    def label(self) -> str:
        return f"{self.id:04d} {self.name}" if self.id is not None else self.name

    @property
    def slug(self) -> str:
        from xlatools.bundle import safe_name

        return safe_name(f"{self.id:04d}-{self.name}" if self.id is not None else self.name)

    def files(self) -> dict[str, str]:
        return {
            k: str(v)
            for k, v in (("text", self.text), ("proto", self.proto), ("snapshot", self.snapshot), ("mlir", self.mlir))
            if v is not None
        }


def check_hlo_text(path: Path) -> None:
    """Refuse early what is not before-optimisation HLO text (the target would only say 'syntax error')."""
    if "after_optimizations" in path.name:
        raise UsageError(
            f"{path}: optimised HLO does not compile again (its layouts and fusions are final)",
            hint="replay the module's *.before_optimizations.txt, .hlo.pb or snapshot instead",
        )
    try:
        with open(path, encoding="utf-8", errors="strict") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path}: not a readable HLO text file ({exc})",
            hint="give *.before_optimizations.txt, .hlo, .hlo.pb, *.snapshot.*.pb or .mlir",
        ) from None
    first = next((ln.strip() for ln in head.splitlines() if ln.strip() and not ln.strip().startswith("//")), "")
    if not first.startswith("HloModule"):
        raise UsageError(
            f"{path}: not HLO text (it does not start with 'HloModule')",
            hint="give *.before_optimizations.txt, .hlo, .hlo.pb, *.snapshot.*.pb or .mlir",
        )


def file_kind(path: Path) -> Kind:
    name = path.name
    if name.endswith(".mlir"):
        return "mlir"
    if name.endswith(".pb"):
        if read_bare_name(name)[1] in SNAPSHOT_KINDS:
            return "snapshot"
        return "snapshot" if holds_snapshot(path) else "proto"  # the name does not say: the content does
    return "text"


def from_file(path: Path, execution: int | None = None) -> ModuleSource:
    kind = file_kind(path)
    if kind == "text":
        check_hlo_text(path)
    if (
        kind == "mlir" and (tied := _tied_stablehlo(path, execution)) is not None
    ):  # jax's, or jaxlib 0.8.0-0.10.0's XLA's
        return tied
    # jaxlib >= 0.10.1 dumps module_NNNN.<name>/module.mlir: the folder names the module
    in_folder = path.name == "module.mlir"
    dump = parse_dump_name(f"{path.parent.name}/{path.name}" if in_folder else path.name)
    if dump is None:
        stem = path.parent.name if in_folder else read_bare_name(path.name)[0]
        bare = ModuleSource(name=stem or path.name, id=None, **{kind: path})
        if kind == "snapshot" and stem and not is_unoptimized(path):  # a snapshot by content: its own siblings
            _pair_with_siblings(bare, path.parent, stem)
        return bare
    folder = path.parent.parent if in_folder else path.parent
    source = ModuleSource(name=dump.module_name, id=dump.module_id, stem=folder / dump.stem, **{kind: path})
    if kind == "snapshot" and not is_unoptimized(path):
        _pair_with_siblings(source, path.parent, dump.stem)
    elif kind in ("text", "proto", "mlir"):  # a file replayed alone uses its module's snapshot: arguments and result
        source.snapshot = sibling_snapshot(folder, dump.stem, execution, source.label)
    return source


def _tied_stablehlo(path: Path, execution: int | None) -> ModuleSource | None:
    """A StableHLO file tied to a module of the dump beside it (run/jax_ir.py), as that module with this one form:
    its snapshot (or recorded arguments) and the run's files go with it. None for a file tied to no module."""
    from xlatools.run.dumps import index_dump
    from xlatools.run.jax_ir import dump_root_of, is_xla_stablehlo, parse_jax_ir_name

    if parse_jax_ir_name(path.name):
        root = dump_root_of(path)
    elif is_xla_stablehlo(f"{path.parent.name}/{path.name}"):
        root = path.parent.parent
    else:
        return None  # module_NNNN.<name>/module.mlir names its module itself; another file names none
    try:
        index = index_dump(root) if root.is_dir() else None
    except OSError:
        return None
    given = os.path.normpath(path)
    for module in index.modules.values() if index else ():
        if module.stablehlo and os.path.normpath(root / module.stablehlo) == given:
            found = _module_source(root, module, execution)
            return ModuleSource(name=found.name, id=found.id, mlir=path, snapshot=found.snapshot, stem=found.stem)
    return None


def sibling_snapshot(folder: Path, stem: str, execution: int | None = None, label: str = "") -> Path | None:
    """The snapshot the same dump wrote of the module's first execution (or of `execution`: --snapshot), its
    arguments and result, else the arguments and results the run recorded itself (run --record-inputs), if any: a
    dumped file replayed alone runs on what the run ran, not on made-up inputs."""
    from xlatools.run.recorder import recorded_snapshot

    found = [p.name for p in folder.glob(f"{glob.escape(stem)}.snapshot.*.pb") if p.is_file() and not is_unoptimized(p)]
    recorded = None if found else recorded_snapshot(folder, stem)
    return _chosen(folder, by_execution(folder, found), recorded, execution, label or stem)


def by_execution(folder: Path, names: list[str]) -> list[str]:
    """Snapshot files in the order of the executions they recorded: XLA writes one per execution, named by a
    run id (not a count), so the oldest file is the first execution."""
    return sorted(names, key=lambda name: ((folder / name).stat().st_mtime_ns, name))


def pick_execution(snapshots: list[str], execution: int | None, label: str) -> str | None:
    """The snapshot of execution `execution` (0 the first, -1 the last; None: the first, when there is one)."""
    if execution is None:
        return snapshots[0] if snapshots else None
    if not -len(snapshots) <= execution < len(snapshots):
        held = f"snapshots of executions 0 to {len(snapshots) - 1}" if snapshots else "no snapshot"
        raise UsageError(
            f"--snapshot {execution}: module {label} has {held}",
            hint="pick one of those (-1: the last) or the module with --module; dump with --preset dump:snapshots",
        )
    return snapshots[execution]


def _pair_with_siblings(source: ModuleSource, folder: Path, stem: str) -> None:
    """A snapshot of --xla_dump_hlo_snapshots holds the OPTIMISED module, which XLA cannot compile again
    (final layouts, fusions with backend configs): its arguments and result go with the unoptimised
    module the same dump wrote beside it."""
    siblings = {
        "text": folder / f"{stem}.before_optimizations.txt",
        "proto": folder / f"{stem}.before_optimizations.hlo.pb",
        "mlir": folder / stem / "module.mlir",
    }
    for kind, sibling in siblings.items():
        if sibling.is_file():
            setattr(source, kind, sibling)
    if source.mlir is None and source.id is not None:  # the StableHLO tied to its module (jax_ir/), tried first
        source.mlir = _stablehlo_of(folder, source.id)


def _stablehlo_of(root: Path, module_id: int) -> Path | None:
    from xlatools.run.dumps import index_dump

    try:
        module = index_dump(root).modules.get(module_id)
    except OSError:
        return None
    return Path(os.path.normpath(root / module.stablehlo)) if module and module.stablehlo else None


def helpers_left_out(source: Path, process: int | None = None) -> list[str]:
    """The jax helper modules a replay of the bundle or dump at `source` leaves out without --all ("0002 jit_matmul")."""
    from xlatools.run.dumps import index_dump
    from xlatools.run.process_dumps import choose_dump

    index = index_dump(choose_dump(Path(os.path.abspath(Path(source).expanduser())), process).root)
    return [f"{m.id:04d} {m.name}" for m in sorted(index.modules.values(), key=lambda m: m.id) if is_helper(m.name)]


def from_dump(root: Path, refs: list[str], include_all: bool, execution: int | None = None) -> list[ModuleSource]:
    from xlatools.run.dumps import index_dump

    index = index_dump(root)
    if refs:
        chosen = [index.find(ref) for ref in refs]
    else:
        chosen = [m for m in sorted(index.modules.values(), key=lambda m: m.id) if include_all or not is_helper(m.name)]
    sources = []
    for module in chosen:
        source = _module_source(root, module, execution)
        if (
            source.text is None
            and source.proto is None
            and source.snapshot is None
            and (source.mlir is None or not refs)
        ):
            if refs:
                raise UsageError(
                    f"module {module.id:04d} {module.name} has no before-optimisation HLO or snapshot in {root}",
                    hint="dump with --preset dump:hlo",
                )
            continue
        sources.append(source)
    if not sources:
        raise UsageError(
            f"{root}: no module to replay" + ("" if include_all else " (jax helper modules are skipped)"),
            hint="dump with --preset dump:hlo (or dump:full); --all includes jax's helper modules",
        )
    return sources


def _module_source(root: Path, module, execution: int | None = None) -> ModuleSource:
    """A dumped module's files, as a replay reads them: text, proto, the first execution's snapshot (or that of
    `execution`), module.mlir."""
    from xlatools.run.recorder import recorded_snapshot

    files = set(module.files)
    named = {f: found for f in files if (found := parse_dump_name(f, module_name=module.name)) is not None}
    before = named.get(module.before_file or "")
    proto = f"{before.stem}.before_optimizations.hlo.pb" if before else None
    snapshots = by_execution(
        root, [f for f, n in named.items() if n.kind is DumpKind.SNAPSHOT and n.tail.startswith("snapshot.")]
    )
    # Without XLA's: the arguments and results the run recorded itself (run/recorder.py), then the
    # arguments (and, alone, the module) of an unoptimised snapshot.
    recorded = recorded_snapshot(root, Path(before.stem).name) if before and not snapshots else None
    snapshots = snapshots or (
        []
        if recorded
        else sorted(
            f
            for f, n in named.items()
            if n.kind is DumpKind.UNOPTIMIZED_SNAPSHOT and n.tail.startswith("execution_") and n.fmt == "pb"
        )
    )
    # XLA's module_NNNN.<name>/module.mlir (jaxlib >= 0.10.1), else jax's own tied to the module (run/jax_ir.py)
    mlir = next((f for f, n in named.items() if n.kind is DumpKind.MODULE_MLIR), None) or module.stablehlo
    stem = before.stem if before else next((n.stem for n in named.values()), None)
    return ModuleSource(
        name=module.name,
        id=module.id,
        text=root / module.before_file if module.before_file else None,
        proto=root / proto if proto and proto in files else None,
        snapshot=_chosen(root, snapshots, recorded, execution, f"{module.id:04d} {module.name}"),
        mlir=Path(os.path.normpath(root / mlir)) if mlir else None,
        stem=root / Path(stem).name if stem else None,
    )


def _chosen(root: Path, snapshots: list[str], recorded: Path | None, execution: int | None, label: str) -> Path | None:
    """The execution's snapshot; what the run recorded itself (one execution) when XLA wrote none."""
    if recorded is not None and not snapshots and execution in (None, 0, -1):
        return recorded
    chosen = pick_execution(snapshots, execution, label)
    return root / chosen if chosen else None


def resolve(
    source: Path, refs: list[str], include_all: bool, process: int | None = None, execution: int | None = None
) -> tuple[str, list[ModuleSource]]:
    """("file" | "dump" | "bundle", modules) for SOURCE; of a multi-process run, the modules of one
    process's dump (`process`, default 0; run/process_dumps.py); `execution`: whose snapshot (--snapshot)."""
    from xlatools.run.process_dumps import choose_dump

    path = Path(os.path.abspath(Path(source).expanduser()))  # the target runs in another directory
    if path.is_file():
        if refs or process is not None:
            raise UsageError(
                f"{'--module' if refs else '--process'} picks from a bundle or dump folder, not a single file"
            )
        if execution is not None and file_kind(path) not in ("text", "proto"):
            raise UsageError(
                f"--snapshot {execution}: picks among the snapshots beside HLO text or proto, not {path.name}"
            )
        return "file", [from_file(path, execution)]
    if path.exists() and not path.is_dir():  # a FIFO or a device: never opened (a FIFO would block)
        raise UsageError(
            f"{path}: not a regular file or a folder",
            hint="give a run bundle, a dump folder, HLO text/proto, a snapshot or a repro pack",
        )
    choice = choose_dump(path, process)
    modules = from_dump(choice.root, refs, include_all, execution)
    return ("bundle" if choice.root != path else "dump"), modules
