"""Repro packs: the smallest self-contained reproducer of a bundle's modules, and replaying one.

`build_pack` replays the chosen modules once (the expected outcome: outcome class,
fingerprint of the optimised HLO, output digests) and packs them with the program
copy, flags, redacted environment, versions and profile. `run_pack` unpacks a pack
safely into the output folder, replays it with the pack's own options, and answers
reproduced / not-reproduced (with what differs) / cannot-run.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from copy import copy
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, cast

from xlatools import __version__
from xlatools.errors import EXIT_FAILED, EXIT_MISSING, EXIT_OK, EnvironmentMissing, UsageError
from xlatools.fsutil import check_output, make_dir
from xlatools.records.replay import (PACK_FORMAT, PACKED_INPUTS, ModuleRecord, PackedOptions, PackIndex, PackModule,
                                     PackRun, PackVersions)
from xlatools.records.run import RunManifest
from xlatools.replay.execute import ReplayResult
from xlatools.replay.pack import Member, PackError, extract, member_path, verify, write_pack
from xlatools.replay.plan import INPUT_MODES, ReplayRequest
from xlatools.replay.sources import ModuleSource
from xlatools.run.target import Target
from xlatools.vocab import PackMatch, ReplayOutcome, ReproOutcome, choices

if TYPE_CHECKING:
    from xlatools.console import Reporter

FORMAT = PACK_FORMAT
Entries = dict[tuple[int | None, str], dict[str, str]]  # module (id, name) -> form -> path inside the pack
EXIT_CODES = {ReproOutcome.REPRODUCED: EXIT_FAILED, ReproOutcome.NOT_REPRODUCED: EXIT_OK,
              ReproOutcome.CANNOT_RUN: EXIT_MISSING}
SOURCE_KINDS = ("text", "proto", "snapshot", "mlir")
# XLA flags whose value names a file or folder (--xla_dump_to, --xla_gpu_cuda_data_dir, ..._from, ..._file):
# a pack carrying one would make the replaying machine read or write where the pack says.
PATH_FLAG = re.compile(r"_(to|dir|path|file|from|directory)$")


@dataclass(kw_only=True)
class ModulePair:
    expected: PackModule
    got: PackModule | None  # None: the module was not replayed


@dataclass(kw_only=True)
class ReproResult:
    """The answer of `repro run` (and of `bisect --replay PACK`: reproduced = bad, cannot-run = skip)."""

    outcome: ReproOutcome
    reason: str
    differences: list[str] = field(default_factory=list)
    bundle: str | None = None
    modules: list[ModulePair] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]


def expected_of(module: ModuleRecord) -> PackModule:
    """What a pack records of one replayed module."""
    test = module.test
    return PackModule(name=module.name, id=module.id, outcome=module.outcome, failed_run=module.failed_run,
                      phase=test.phase if test else None, signal=test.signal if test else None,
                      fingerprint=module.fingerprint, outputs=[o.sha256 for o in module.outputs])


def _compare_module(e: PackModule, g: ModuleRecord | None, match: PackMatch) -> tuple[bool, list[str], str | None]:
    """(same under `match`, differences, why it cannot run here or None)."""
    label = e.label
    if g is None:
        return False, [], f"{label}: was not replayed"
    got = expected_of(g)
    if got.outcome == ReplayOutcome.COMPILE_ERROR and got.phase == "load" and e.outcome != ReplayOutcome.COMPILE_ERROR:
        message = (g.test.message if g.test else None) or ""
        return False, [], f"{label}: this jaxlib cannot load the module ({message[:200]})"
    diffs, same = [], True
    if got.outcome != e.outcome:
        diffs.append(f"{label}: outcome {got.outcome}, expected {e.outcome}")
        same = False
    if e.fingerprint and got.fingerprint != e.fingerprint:
        diffs.append(f"{label}: fingerprint {str(got.fingerprint)[:12]}, expected {e.fingerprint[:12]}")
        same = same and match != PackMatch.FINGERPRINT
    if e.outputs and got.outputs != e.outputs:
        diffs.append(f"{label}: output digests differ ({len(got.outputs)} outputs, expected {len(e.outputs)})")
        same = same and match != PackMatch.OUTPUTS
    return same, diffs, None


def verdict(expected: list[PackModule], got: list[ModuleRecord], match: PackMatch = PackMatch.CLASS) -> ReproResult:
    """Pure: the pack's expected modules against a replay's modules."""
    by_key = {(m.id, m.name): m for m in got}
    differences, cannot, all_same = [], [], True
    pairs = []
    for e in expected:
        replayed = by_key.get((e.id, e.name))
        same, diffs, why = _compare_module(e, replayed, match)
        differences += diffs
        all_same = all_same and same
        if why:
            cannot.append(why)
        pairs.append(ModulePair(expected=e, got=expected_of(replayed) if replayed else None))
    if cannot:
        return ReproResult(outcome=ReproOutcome.CANNOT_RUN, reason="; ".join(cannot), differences=differences, modules=pairs)
    if all_same:
        return ReproResult(outcome=ReproOutcome.REPRODUCED, differences=differences, modules=pairs,
                           reason=f"every module gave its expected outcome (compared: {match})")
    return ReproResult(outcome=ReproOutcome.NOT_REPRODUCED, reason="; ".join(differences) or "outcome differs",
                       differences=differences, modules=pairs)


def run_of(source: Path) -> RunManifest | None:
    """The run a bundle records, None for a dump folder or a single file; a damaged or foreign
    manifest is bad input (exit 2, naming the file)."""
    from xlatools.records import read_bundle

    source = Path(source).expanduser()
    if not source.is_dir() or not os.path.lexists(source / "manifest.json"):
        return None
    return cast(RunManifest, read_bundle(source, kinds=("run",)))


def _pack_files(modules: list[ModuleSource], source: Path, run: RunManifest | None) -> tuple[dict[str, bytes], Entries]:
    files: dict[str, bytes] = {}
    entries: Entries = {}
    for module in modules:
        packed = {}
        for kind, path in module.files().items():
            name = f"modules/{module.slug}/{Path(path).name}"
            files[name] = Path(path).read_bytes()
            packed[kind] = name
        entries[(module.id, module.name)] = packed
    program = Path(source) / "program"
    if run and program.is_dir():
        for path in sorted(p for p in program.rglob("*") if p.is_file() and not p.is_symlink()):
            files[f"program/{path.relative_to(program).as_posix()}"] = path.read_bytes()
    if run and run.profile:
        from xlatools.records import to_json

        files["profile.json"] = json.dumps(to_json(run.profile), indent=2, sort_keys=True).encode()
        lock = Path(run.profile.file or "").parent / "xlatools.lock"  # `pin resolve` writes it beside the profile
        if run.profile.file and lock.is_file():
            files["xlatools.lock"] = lock.read_bytes()
    return files, entries


def _index(request: ReplayRequest, replayed: ReplayResult, run: RunManifest | None, target: Target,
           entries: Entries) -> PackIndex:
    options = PackedOptions(**{f.name: copy(getattr(request, f.name)) for f in fields(PackedOptions)})
    versions = PackVersions(python=target.python_version, jax=target.jax, jaxlib=target.jaxlib,
                            plugins=list(target.plugins), backend=target.backend, devices=list(target.devices))
    packed_run = PackRun(program=run.program, jax=run.jax, xla_flags=list(run.xla_flags), env_changes=list(run.env_changes),
                         platform=run.platform, presets=list(run.presets)) if run else None
    modules = []
    for module in replayed.record.modules:
        expected = expected_of(module)
        expected.files = entries[(module.id, module.name)]
        modules.append(expected)
    return PackIndex(format=FORMAT, xlatools_version=__version__, source=Path(request.source).name, replay=options,
                     versions=versions, run=packed_run, modules=modules)


def build_pack(request: ReplayRequest, out_file: Path, out_root: Path, argv: list[str],
               reporter: Reporter) -> tuple[Path, ReplayResult]:
    """Replay `request.source` once (the expected outcome) and write the pack: (the pack, that replay)."""
    from xlatools.records import to_json
    from xlatools.redact import redact
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.replay.sources import resolve

    inputs_file = request.inputs not in (None, *INPUT_MODES)
    if inputs_file and not Path(str(request.inputs)).is_file():
        raise UsageError(f"repro pack: --inputs {request.inputs}: no such file", hint="random, zeros, ones or an .npz")
    check_output(out_file, "-o")  # before the replay: a pack that cannot be written is refused at once
    kind, modules = resolve(request.source, request.modules, request.include_all, request.process)
    run = run_of(request.source) if kind == "bundle" else None
    prepared = prepare(request, (kind, modules))
    replayed = execute_replay(prepared, out_root, argv, reporter)
    files, entries = _pack_files(modules, request.source, run)
    if inputs_file:  # travels inside the pack (reduce's minimal modules need their exact inputs)
        files[PACKED_INPUTS] = Path(str(request.inputs)).read_bytes()
    index = _index(request, replayed, run, prepared.targets[request.python], entries)
    if inputs_file:
        index.replay.inputs = PACKED_INPUTS
    files["pack.json"] = json.dumps(redact(to_json(index)), indent=2, sort_keys=True).encode()  # a pack travels
    return write_pack(files, out_file), replayed


def _modules_of(index: PackIndex, root: Path, members: dict[str, Member], archive: Path) -> list[ModuleSource]:
    """The modules pack.json lists, each file resolved inside the verified member list (member_path)."""
    modules = []
    for number, entry in enumerate(index.modules):
        if not entry.files or not set(entry.files) <= set(SOURCE_KINDS):
            raise PackError(f"{archive}: pack.json [modules[{number}].files] must map {', '.join(SOURCE_KINDS)} to "
                            "files of the pack", hint="the pack is damaged or was not written by `xlatools repro pack`")
        paths = {kind: member_path(root, members, rel, f"modules[{number}].files.{kind}", archive)
                 for kind, rel in entry.files.items()}
        modules.append(ModuleSource(name=entry.name, id=entry.id, **paths))
    if not modules:
        raise PackError(f"{archive}: pack.json lists no module")
    return modules


def _check_packed(packed: PackedOptions, archive: Path) -> None:
    """A pack may not name files or interpreters of the machine that replays it: inputs from a file (but its own), a
    reference other than the CPU backend, XLA flags whose value is a path (see docs/security.md)."""
    from xlatools.replay.plan import INPUT_MODES, REFERENCES
    from xlatools.run.flags import flag_name

    problems = []
    if packed.inputs not in (None, *INPUT_MODES, PACKED_INPUTS):
        problems.append(f"inputs {packed.inputs!r} (a pack carries random, zeros, ones or its own {PACKED_INPUTS})")
    problems += [f"references {r!r} (only {', '.join(REFERENCES)})" for r in packed.references if r not in REFERENCES]
    problems += [f"xla_flags {f!r} (a flag that names a path of the machine replaying it)"
                 for f in packed.xla_flags if PATH_FLAG.search(flag_name(f))]
    problems += [f"{name} {value!r} (a finite number, 0 or more)" for name, value in
                 (("atol", packed.atol), ("rtol", packed.rtol)) if not 0 <= value < float("inf")]
    if problems:
        raise PackError(f"{archive}: pack.json [replay] holds what a pack may not: {'; '.join(problems)}",
                        hint="see docs/security.md: what a pack may contain")


def read_index(root: Path, archive: Path) -> PackIndex:
    """The pack's pack.json: a damaged, foreign or newer index is bad input naming the pack and each key."""
    from dataclasses import replace

    from xlatools.records.base import read_json_object, validate

    path, shown = root / "pack.json", f"pack.json in {archive}"
    hint = "give a .tar.gz written by `xlatools repro pack`"
    try:
        data = read_json_object(path, "pack index", hint=hint)
        if data.get("format") != FORMAT:
            raise PackError(f"{archive}: pack.json: pack format {data.get('format')!r}, this xlatools reads {FORMAT}",
                            hint="replay it with the xlatools version that wrote it")
        return validate(data, PackIndex, path, what="pack index", hint=hint)
    except PackError:
        raise
    except UsageError as exc:  # name the pack, not the folder it was unpacked into (removed afterwards)
        raise PackError(shown + exc.message.removeprefix(str(path)), hint=exc.hint,
                        problems=[replace(p, file=shown) for p in exc.problems]) from None


def _request_of(index: PackIndex, archive: Path, python: str) -> ReplayRequest:
    """The replay a pack asks for: its options (every field of PackedOptions is one of ReplayRequest)."""
    packed = index.replay
    return ReplayRequest(source=archive, python=python, name=f"repro-{archive.name.split('.')[0]}",
                         **{f.name: copy(getattr(packed, f.name)) for f in fields(packed)})


def run_pack(pack_path: str | Path, python: str | None = None, out_root: str | Path = "artifacts",
             match: PackMatch | str = PackMatch.CLASS, argv: list[str] | None = None, same_jaxlib: bool = False,
             reporter: Reporter | None = None) -> ReproResult:
    """Replay a repro pack in `python` (default: this interpreter) into a replay bundle under `out_root`.

    Raises PackError (exit 2) for a damaged or unsafe pack; returns cannot-run when this
    interpreter cannot replay it (no jax, no GPU, an XLA flag or module this jaxlib does not know,
    or, with `same_jaxlib`, a jaxlib other than the pack's). `reporter`: the progress of the
    replay (default: on stderr)."""
    from xlatools.console import Reporter
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.run.frontend_checks import UnknownFlags
    from xlatools.run.target import resolve_python

    try:
        match = PackMatch(match)
    except ValueError:
        raise UsageError(f"--match {match}: expected {choices(PackMatch)}") from None
    archive = Path(pack_path)
    out_root = Path(os.path.abspath(out_root))
    members = verify(archive)  # before anything is written: a damaged pack leaves no trace
    make_dir(out_root)
    unpacked = out_root / f".unpack-{secrets.token_hex(4)}"
    try:
        extract(archive, unpacked, members)
        index = read_index(unpacked, archive)
        _check_packed(index.replay, archive)
        modules = _modules_of(index, unpacked, members, archive)
        request = _request_of(index, archive, resolve_python(python))
        if request.inputs == PACKED_INPUTS:
            request.inputs = str(member_path(unpacked, members, PACKED_INPUTS, "replay.inputs", archive))
        try:
            prepared = prepare(request, ("pack", modules))
        except (UnknownFlags, EnvironmentMissing) as exc:
            return ReproResult(outcome=ReproOutcome.CANNOT_RUN, reason=exc.message + (f" ({exc.hint})" if exc.hint else ""))
        wanted, have = index.versions.jaxlib if index.versions else None, prepared.targets[request.python].jaxlib
        if same_jaxlib and wanted != have:
            return ReproResult(outcome=ReproOutcome.CANNOT_RUN,
                               reason=f"the pack names jaxlib {wanted}; {request.python} has {have}")
        replayed = execute_replay(prepared, out_root, argv or ["repro", "run", str(archive)], reporter or Reporter())
        bundle = str(replayed.record.bundle)
        shutil.move(str(unpacked), str(Path(bundle) / "pack"))
        result = verdict(index.modules, replayed.record.modules, match)
        result.bundle = bundle
        return result
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
