"""What replay refuses by design, and how it says so.

A replay is a process of its own, on one device, compiling a module from a dumped file. So it
refuses what such a process cannot honestly run: an optimised snapshot's module alone (XLA cannot
compile it again), HLO text whose large constants XLA elided (`constant({...})` parses back as
other numbers), a module compiled for several devices (one process of a multi-process run, or
shard_map/pjit/pmap on several local devices), and a host callback that runs (the Python function
it calls lives only in the program). None of these is a finding about the module: the first two
are bad input with the file to use instead (exit 2); a module for several devices is skipped (listed with
the reason; exit 3 only when nothing else was replayed), and a callback that runs is cannot-run (exit 3).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.hlo.dump_names import read_bare_name
from xlatools.records.replay import ModuleRecord, RunRecord
from xlatools.replay.hloproto import is_unoptimized
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import ReplayOutcome


def optimised_only(source: ModuleSource) -> bool:
    """Only an optimised snapshot's module to compile: nothing XLA can compile again."""
    return (
        bool(source.snapshot)
        and not is_unoptimized(source.snapshot)
        and not (source.text or source.proto or source.mlir)
    )


def refuse_optimised_only(source: ModuleSource) -> None:
    if optimised_only(source):
        raise UsageError(
            f"{source.snapshot}: this snapshot holds module {source.label} after optimisation, which XLA "
            "cannot compile again (its layouts and fusions are final), and no unoptimised form of it lies beside it",
            hint=f"replay the dump folder or bundle it came from, or keep {read_bare_name(source.snapshot.name)[0] or 'MODULE'}"
            ".before_optimizations.txt (or .hlo.pb) beside it (dump with --preset dump:full); jaxlib >= 0.5 "
            "can dump unoptimised snapshots instead (--xla-flag=--xla_dump_hlo_unoptimized_snapshots)",
        )


ELIDED_CONSTANT = re.compile(rb"constant\(\{\.\.\.\}\)")


def elides_constants(path: Path) -> bool:
    """XLA prints constants of more than a few elements as `constant({...})` in its text dumps, and its parser
    reads that back without complaint as other values: such text is not the module that ran."""
    try:
        return ELIDED_CONSTANT.search(Path(path).read_bytes()) is not None
    except OSError:
        return False


def refuse_elided_text(source: ModuleSource, source_from: str) -> None:
    """Text with elided constants is refused where it would be the module replayed."""
    if source.text is None or source_from not in ("auto", "text", "snapshot"):
        return
    lossless = source.proto or source.mlir or (source.snapshot and is_unoptimized(source.snapshot))
    if (source_from != "text" and lossless) or not elides_constants(source.text):
        return
    sibling = source.text.with_name(source.text.name.replace(".txt", ".hlo.pb"))
    raise UsageError(
        f"{source.text}: this HLO text elides large constants (`constant({{...}})`, as XLA prints them), so "
        f"module {source.label} cannot be rebuilt from it: a replay would compute with other values",
        hint=(
            f"replay {sibling.name} beside it"
            if sibling.is_file()
            else "dump the module as a proto (--preset dump:proto; dump:full includes it) and replay the .hlo.pb"
        )
        + ", the module's StableHLO (module_NNNN.<name>/module.mlir, or jax_ir/ of a bundle), or the dump folder "
        "/ bundle",
    )


_DEVICES = re.compile(rb"(num_partitions|replica_count|mhlo\.num_partitions|mhlo\.num_replicas)\s*=\s*(\d+)")
_MESH = re.compile(rb"#sdy\.mesh<\[([^\]]*)\]")


@dataclass(frozen=True)
class DeviceNeed:
    devices: int
    how: str  # what says so: "num_partitions=4", "replica_count=4", "a device mesh ..."


def devices_needed(source: ModuleSource) -> DeviceNeed | None:
    """How many devices the module was compiled for, when more than one (`num_partitions` of shard_map/pjit,
    `replica_count` of pmap). Read from the head of the text or StableHLO (the module's configuration), a
    proto's Shardy mesh, or the text XLA dumped beside a proto."""
    heads = [source.text, source.mlir]
    if source.proto is not None and source.proto.name.endswith(".hlo.pb"):
        heads.append(source.proto.with_name(source.proto.name[: -len(".hlo.pb")] + ".txt"))
    for path in heads:
        counts = {name.decode(): int(value) for name, value in _DEVICES.findall(_head(path, 8192)) if int(value) > 1}
        if counts:
            partitions = max(counts.get("num_partitions", 1), counts.get("mhlo.num_partitions", 1))
            replicas = max(counts.get("replica_count", 1), counts.get("mhlo.num_replicas", 1))
            return DeviceNeed(partitions * replicas, ", ".join(f"{k}={v}" for k, v in counts.items()))
    for mesh in _MESH.findall(_head(source.proto, 1 << 26)):
        sizes = [int(size) for size in re.findall(rb"=(\d+)", mesh)]
        if math.prod(sizes) > 1:
            return DeviceNeed(math.prod(sizes), f"a device mesh {mesh.decode(errors='replace')}")
    return None


def _head(path: Path | None, size: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except (OSError, TypeError):
        return b""


def refuse_multi_device(source: ModuleSource, record: ModuleRecord, python: str) -> bool:
    """The one refusal of modules made for several devices (a multi-process run's, or shard_map/pjit/pmap on
    several local devices): replay compiles and runs on one device, so such a module is skipped (no verdict; a
    replay whose every module is skipped cannot run, exit 3), said before any target starts. True when refused (the record holds the reason)."""
    from xlatools.run.process_dumps import process_of

    need = devices_needed(source)
    if need is None:
        return False
    where = process_of(Path(source.text or source.proto or source.mlir or source.snapshot or "."))
    across = f" across the {where[1]} processes of a multi-process run" if where else ""
    rerun = f"xlatools run --processes {where[1]} PROGRAM" if where else "xlatools run PROGRAM"
    message = (
        f"cannot replay module {source.label} alone: it was compiled for {need.devices} devices{across} "
        f"({need.how}: shard_map/pjit partitions or pmap replicas), and replay runs single-device modules only "
        f"(a limit of xlatools' replay, not a finding about the module); reproduce it with the program: {rerun}"
    )
    record.runs.append(
        RunRecord(label="test", python=python, failure=ReplayOutcome.SKIPPED, phase="load", message=message)
    )
    return True


CALLBACK_TARGET = re.compile(rb"xla_(?:ffi_)?(?:partitioned_)?python_(?:cpu|gpu|tpu)_callback")


def host_callback(source: ModuleSource) -> str | None:
    """The custom-call target through which the module calls back into the Python process that compiled it
    (jax.pure_callback, io_callback, debug.print, debug callbacks), or None."""
    for path in (source.text, source.proto, source.mlir, source.snapshot):
        if path is not None:
            try:
                found = CALLBACK_TARGET.search(Path(path).read_bytes())
            except OSError:
                continue
            if found:
                return found.group(0).decode()
    return None


def judge_callback(source: ModuleSource, record: ModuleRecord) -> None:
    """A module with a host callback calls back into the Python process that compiled it, which no replay has.
    Dormant callbacks (equinox's runtime error checks, a debug.print in a branch not taken) never run, and the
    module replays; a failure while running is what an executed callback does here, so no verdict: cannot-run
    (the caller settles the module's outcome afterwards)."""
    target = host_callback(source)
    if target is None:
        return
    failed = next(
        (
            run
            for run in record.runs
            if run.phase == "run" and run.failure in (ReplayOutcome.CRASH, ReplayOutcome.RUNTIME_ERROR)
        ),
        None,
    )
    if failed is None:
        record.notes.append(f"the module holds a host callback ({target}) that did not run here")
        return
    failed.message = (
        f"refused by design: the module called back into the Python process that ran it (custom call "
        f"{target}: jax.pure_callback, io_callback, jax.debug.print or a debug callback), and a replay has "
        f"no such process (here: {failed.failure}{' ' + failed.signal if failed.signal else ''}: "
        f"{(failed.message or '')[:200]}); run the program itself (xlatools run) to reproduce it"
    )
    failed.failure = ReplayOutcome.CANNOT_RUN
