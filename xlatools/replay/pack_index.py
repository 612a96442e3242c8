"""A pack's pack.json read as untrusted input: validated against the typed index, every file it names
resolved inside the verified member list, and its replay options checked against what a pack may
carry (docs/security.md)."""

from __future__ import annotations

import re
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.replay import PACK_FORMAT, PACKED_INPUTS, PackedOptions, PackIndex
from xlatools.replay.pack import Member, PackError, member_path
from xlatools.replay.sources import ModuleSource
from xlatools.run.manifest import NUMERICS_ENV

SOURCE_KINDS = ("text", "proto", "snapshot", "mlir")
# XLA flags whose value names a file or folder (--xla_dump_to, --xla_gpu_cuda_data_dir, ..._from, ..._file):
# a pack carrying one would make the replaying machine read or write where the pack says.
PATH_FLAG = re.compile(r"_(to|dir|path|file|from|directory)$")


def modules_of(index: PackIndex, root: Path, members: dict[str, Member], archive: Path) -> list[ModuleSource]:
    """The modules pack.json lists, each file resolved inside the verified member list (member_path)."""
    modules = []
    for number, entry in enumerate(index.modules):
        if not entry.files or not set(entry.files) <= set(SOURCE_KINDS):
            raise PackError(
                f"{archive}: pack.json [modules[{number}].files] must map {', '.join(SOURCE_KINDS)} to "
                "files of the pack",
                hint="the pack is damaged or was not written by `xlatools repro pack`",
            )
        paths = {
            kind: member_path(root, members, rel, f"modules[{number}].files.{kind}", archive)
            for kind, rel in entry.files.items()
        }
        modules.append(ModuleSource(name=entry.name, id=entry.id, **paths))
    if not modules:
        raise PackError(f"{archive}: pack.json lists no module")
    return modules


# The variables a pack may restore: those that change numbers, less the one that names a file (XLA_FLAGS_FILE).
PACKED_ENV = tuple(name for name in NUMERICS_ENV if name != "XLA_FLAGS_FILE")


def check_packed(packed: PackedOptions, archive: Path) -> None:
    """A pack may not name files or interpreters of the machine that replays it: inputs from a file (but its own), a
    reference other than the CPU backend, XLA flags whose value is a path (see docs/security.md)."""
    from xlatools.replay.plan import INPUT_MODES, REFERENCES
    from xlatools.run.flags import flag_name

    problems = []
    if packed.inputs not in (None, *INPUT_MODES, PACKED_INPUTS):
        problems.append(f"inputs {packed.inputs!r} (a pack carries random, zeros, ones or its own {PACKED_INPUTS})")
    problems += [f"references {r!r} (only {', '.join(REFERENCES)})" for r in packed.references if r not in REFERENCES]
    problems += [
        f"xla_flags {f!r} (a flag that names a path of the machine replaying it)"
        for f in packed.xla_flags
        if PATH_FLAG.search(flag_name(f))
    ]
    problems += [
        f"{name} {value!r} (a finite number, 0 or more)"
        for name, value in (("atol", packed.atol), ("rtol", packed.rtol))
        if not 0 <= value < float("inf")
    ]
    problems += [
        f"env {name!r} (only the numerics variables {', '.join(PACKED_ENV)})"
        for name in packed.env
        if name not in PACKED_ENV
    ]
    if problems:
        raise PackError(
            f"{archive}: pack.json [replay] holds what a pack may not: {'; '.join(problems)}",
            hint="see docs/security.md: what a pack may contain",
        )


def pack_references(index: PackIndex, given: list[str]) -> tuple[list[str], str | None]:
    """The reference interpreters of a pack made with --reference-python: one given per recorded one
    (a pack never picks an interpreter of the machine replaying it, even one at the recorded path);
    (interpreters, why it cannot run) when they are not given."""
    recorded = index.reference_pythons
    if recorded and len(given) != len(recorded):
        return [], (
            f"the pack compares with {len(recorded)} reference interpreter(s) (jaxlib "
            + ", ".join(f"{r.jaxlib}, made with {r.python}" for r in recorded)
            + f"); --reference-python gave {len(given)}: give one interpreter with that jaxlib for each"
        )
    return list(given), None


def read_index(root: Path, archive: Path) -> PackIndex:
    """The pack's pack.json: a damaged, foreign or newer index is bad input naming the pack and each key."""
    from dataclasses import replace

    from xlatools.records.base import read_json_object, validate

    path, shown = root / "pack.json", f"pack.json in {archive}"
    hint = "give a .tar.gz written by `xlatools repro pack`"
    try:
        data = read_json_object(path, "pack index", hint=hint)
        if data.get("format") != PACK_FORMAT:
            raise PackError(
                f"{archive}: pack.json: pack format {data.get('format')!r}, this xlatools reads {PACK_FORMAT}",
                hint="replay it with the xlatools version that wrote it",
            )
        return validate(data, PackIndex, path, what="pack index", hint=hint)
    except PackError:
        raise
    except UsageError as exc:  # name the pack, not the folder it was unpacked into (removed afterwards)
        raise PackError(
            shown + exc.message.removeprefix(str(path)),
            hint=exc.hint,
            problems=[replace(p, file=shown) for p in exc.problems],
        ) from None
