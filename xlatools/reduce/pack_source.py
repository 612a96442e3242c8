"""A repro pack as the source of a reduction (`reduce PACK [--module ID|NAME]`).

The pack is verified and unpacked as `repro run` does (replay/pack.py, replay/pack_index.py: the same checks of
its members and of what pack.json may carry) into `<out>/.reduce-state/pack-<sha256 of the pack>/`, where it stays
for as long as the reduction may be resumed. Its modules are the candidates for `--module`; the settings it
replays with (XLA flags, disabled passes, inputs and seed, platform, tolerances) are the reduction's, under what
the command line gives.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.reduce import ReduceRequest
from xlatools.records.replay import DEFAULT_TOLERANCE, PACKED_INPUTS
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import Platform

GZIP_MAGIC = b"\x1f\x8b"


def is_pack(path: Path) -> bool:
    """A regular file that is a gzip or tar archive (a repro pack; HLO text or a .pb is neither)."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return head.startswith(GZIP_MAGIC) or head[257:262] == b"ustar"


def open_pack(request: ReduceRequest, into: Path) -> tuple[ReduceRequest, list[ModuleSource]]:
    """The request with the pack's settings under the command line's, and the pack's modules (`--module` picks);
    the pack verified and unpacked under `into` (once per pack content)."""
    from xlatools.fsutil import sha256_file
    from xlatools.replay.pack import extract, verify
    from xlatools.replay.pack_index import check_packed, modules_of, read_index

    archive = Path(request.source)
    members = verify(archive)  # before anything is written: a damaged pack leaves no trace
    folder = into / f"pack-{sha256_file(archive)[:16]}"
    if not (folder / "pack.json").is_file():
        partial = into / f".{folder.name}.{os.getpid()}.partial"
        try:
            extract(archive, partial, members)
            os.replace(partial, folder)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    index = read_index(folder, archive)
    check_packed(index.replay, archive)
    modules = pick(modules_of(index, folder, members, archive), request.module, archive)
    packed = index.replay
    inputs = request.inputs
    if inputs is None and packed.inputs == PACKED_INPUTS:
        inputs = str(folder / PACKED_INPUTS)
    elif inputs is None:
        inputs = packed.inputs
    flags = list(packed.xla_flags) + (["--xla_backend_optimization_level=0"] if packed.no_opt else [])
    settled = replace(
        request,
        xla_flags=flags + list(request.xla_flags),
        disable_passes=list(dict.fromkeys([*packed.disable_passes, *request.disable_passes])),
        inputs=inputs,
        seed=request.seed or packed.seed,
        platform=request.platform if request.platform != Platform.AUTO else packed.platform,
        atol=request.atol if request.atol != DEFAULT_TOLERANCE else packed.atol,
        rtol=request.rtol if request.rtol != DEFAULT_TOLERANCE else packed.rtol,
    )
    return settled, modules


def pick(modules: list[ModuleSource], ref: str | None, archive: Path) -> list[ModuleSource]:
    """The pack's module named by `ref` (an id or a name), or all of them when no ref."""
    if ref is None:
        return modules
    found = [m for m in modules if m.name == ref or (ref.isdigit() and m.id == int(ref)) or m.label == ref]
    if not found:
        raise UsageError(
            f"--module {ref}: {archive} holds no such module",
            hint=f"its modules: {', '.join(m.label for m in modules[:12])}",
        )
    return found[:1]
