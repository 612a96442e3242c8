"""Repro packs: the smallest self-contained reproducer of a bundle's modules, and replaying one.

`build_pack` replays the chosen modules once (the expected outcome: outcome class,
fingerprint of the optimised HLO, output digests) and packs them with the program
copy, flags, redacted environment, versions and profile. `run_pack` unpacks a pack
safely into the output folder, replays it with the pack's own options, and answers
reproduced / not-reproduced (with what differs) / cannot-run, or nothing-to-reproduce for a pack
whose modules all ran ok when it was made (a healthy run's pack records no failure).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from copy import copy
from dataclasses import replace, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, cast

from xlatools import __version__
from xlatools.errors import EXIT_FAILED, EXIT_MISSING, EXIT_NOTHING_TO_REPRODUCE, EXIT_OK, EnvironmentMissing, UsageError
from xlatools.fsutil import check_output, make_dir
from xlatools.records.replay import (PACK_FORMAT, PACKED_INPUTS, LeftOut, ModuleRecord, PackedOptions, PackIndex,
                                     PackModule, PackReference, PackRun)
from xlatools.records.run import RunManifest
from xlatools.replay.execute import PreparedReplay, ReplayResult
from xlatools.replay.pack import extract, member_path, verify, write_pack
from xlatools.replay.pack_index import check_packed, modules_of, pack_references, read_index
from xlatools.replay.plan import INPUT_MODES, ReplayRequest
from xlatools.replay.records import missing_kernel, tool_failure
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import PackMatch, PrecisionMode, ReplayOutcome, ReproOutcome, choices

if TYPE_CHECKING:
    from xlatools.console import Reporter

FORMAT = PACK_FORMAT
Entries = dict[tuple[int | None, str], dict[str, str]]  # module (id, name) -> form -> path inside the pack
EXIT_CODES = {ReproOutcome.REPRODUCED: EXIT_FAILED, ReproOutcome.NOT_REPRODUCED: EXIT_OK,
              ReproOutcome.CANNOT_RUN: EXIT_MISSING, ReproOutcome.NOTHING_TO_REPRODUCE: EXIT_NOTHING_TO_REPRODUCE}


@dataclass(kw_only=True)
class ModulePair:
    expected: PackModule
    got: PackModule | None  # None: the module was not replayed


@dataclass(kw_only=True)
class PackResult:
    """What `repro pack` made: the pack, the replay that recorded its expected outcomes, its index."""

    path: Path
    replayed: ReplayResult
    index: PackIndex


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
    why = tool_failure(g)
    if why:  # never a verdict: xlatools could not do its part here
        return False, [], f"{label}: {why}"
    kernel = missing_kernel(g)
    if kernel and e.outcome != ReplayOutcome.COMPILE_ERROR:
        return False, [], (f"{label}: this jaxlib has no custom-call target {kernel}, which the module calls (a kernel "
                            "of the jaxlib that made it)")
    diffs, same = [], True
    if got.outcome != e.outcome:
        diffs.append(f"{label}: outcome {got.outcome}, expected {e.outcome}")
        same = False
    if e.fingerprint and got.fingerprint != e.fingerprint and _unsorted_fingerprint(g) != e.fingerprint:
        diffs.append(f"{label}: fingerprint {str(got.fingerprint)[:12]}, expected {e.fingerprint[:12]}")
        same = same and match != PackMatch.FINGERPRINT
    if e.outputs and got.outputs != e.outputs:
        diffs.append(f"{label}: output digests differ ({len(got.outputs)} outputs, expected {len(e.outputs)})")
        same = same and match != PackMatch.OUTPUTS
    return same, diffs, None


def _unsorted_fingerprint(module: ModuleRecord) -> str | None:
    """The test run's fingerprint as xlatools computed it before backend_config JSON was sorted: a pack made then
    recorded that one (the same compile, the same kernels)."""
    from xlatools.run.hlo_canon import fingerprint

    test = module.test
    try:
        return fingerprint((Path(test.dir) / "optimized.txt").read_text(), sorted_json=False) if test and test.dir else None
    except (OSError, UnicodeDecodeError):
        return None


def nothing_to_reproduce(expected: list[PackModule], oracle: str | None = None) -> str | None:
    """Why a pack has nothing to reproduce (every module it records ran ok: no mismatch, no error), or None.
    `oracle`: the reduction's verdict the pack records, which its replay could not show."""
    if expected and all(m.outcome in (ReplayOutcome.OK, ReplayOutcome.PRECISION) for m in expected):
        why = (f"; the reduction that made it judged by {oracle}, which a pack cannot replay" if oracle else
               "; a pack of a failing run, of a mismatch against --reference cpu, or of a reduction has something "
               "to reproduce")
        return (f"the pack records no failure: its {len(expected)} module(s) ran ok when it was made "
                f"({', '.join(m.label for m in expected)[:300]}){why}")
    return None


def healthy_answer(expected: list[PackModule], result: ReproResult, oracle: str | None = None) -> ReproResult:
    """A pack that records no failure answers nothing-to-reproduce whatever the replay here gave (what it gave
    is said, and its differences listed); cannot-run stays cannot-run."""
    healthy = nothing_to_reproduce(expected, oracle)
    if not healthy or result.outcome == ReproOutcome.CANNOT_RUN:
        return result
    here = "the same outcome" if not result.differences else f"{len(result.differences)} difference(s), listed below"
    return ReproResult(outcome=ReproOutcome.NOTHING_TO_REPRODUCE, reason=f"{healthy}; replayed here: {here}",
                       differences=result.differences, bundle=result.bundle, modules=result.modules)


def verdict(expected: list[PackModule], got: list[ModuleRecord], match: PackMatch = PackMatch.CLASS) -> ReproResult:
    """Pure: the pack's expected modules against a replay's modules."""
    by_key = {(m.id, m.name): m for m in got}
    differences, cannot, differing = [], [], 0
    pairs = []
    for e in expected:
        replayed = by_key.get((e.id, e.name))
        same, diffs, why = _compare_module(e, replayed, match)
        differences += diffs
        differing += not same
        if why:
            cannot.append(why)
        pairs.append(ModulePair(expected=e, got=expected_of(replayed) if replayed else None))
    if cannot:
        return ReproResult(outcome=ReproOutcome.CANNOT_RUN, reason="; ".join(cannot), differences=differences, modules=pairs)
    if not differing:
        return ReproResult(outcome=ReproOutcome.REPRODUCED, differences=differences, modules=pairs,
                           reason=f"every module gave its expected outcome (compared: {match})")
    # The differences are listed once, beside the answer; the reason counts them.
    return ReproResult(outcome=ReproOutcome.NOT_REPRODUCED, differences=differences, modules=pairs,
                       reason=f"{differing} of {len(expected)} module(s) did not give their expected outcome "
                              f"(compared: {match})")


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


def _index(prepared: PreparedReplay, replayed: ReplayResult, run: RunManifest | None, entries: Entries) -> PackIndex:
    request = prepared.plan.request
    target = prepared.targets[request.python]
    options = PackedOptions(**{f.name: copy(getattr(request, f.name)) for f in fields(PackedOptions)})
    versions = target.facts()
    packed_run = PackRun(program=run.program, jax=run.jax, xla_flags=list(run.xla_flags), env_changes=list(run.env_changes),
                         platform=run.platform, presets=list(run.presets)) if run else None
    modules = []
    for module in replayed.record.modules:
        if (module.id, module.name) not in entries:  # left out
            continue
        expected = expected_of(module)
        expected.files = entries[(module.id, module.name)]
        modules.append(expected)
    references = [PackReference(python=p, jaxlib=prepared.targets[p].jaxlib) for p in request.reference_pythons]
    return PackIndex(format=FORMAT, xlatools_version=__version__, source=Path(request.source).name, replay=options,
                     versions=versions, run=packed_run, modules=modules, reference_pythons=references)


def build_pack(request: ReplayRequest, out_file: Path, out_root: Path, argv: list[str], reporter: Reporter,
               oracle: str | None = None) -> PackResult:
    """Replay `request.source` once (the expected outcome) and write the pack. Modules xlatools could not
    replay are left out and named (a pack with none left is cannot-run, exit 3). `oracle`: the verdict that
    made the module interesting (reduce's), recorded beside the expected outcome."""
    from xlatools.records import to_json
    from xlatools.redact import redact
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.replay.sources import resolve

    inputs_file = request.inputs not in (None, *INPUT_MODES)
    if inputs_file and not Path(str(request.inputs)).is_file():
        raise UsageError(f"repro pack: --inputs {request.inputs}: no such file", hint="random, zeros, ones or an .npz")
    from xlatools.replay.pack_index import PATH_FLAG
    from xlatools.run.flags import flag_name

    for flag in request.xla_flags:  # what the pack's own `repro run` would refuse: refused now, before any work
        if PATH_FLAG.search(flag_name(flag)):
            raise UsageError(f"repro pack: --xla-flag {flag}: names a path of this machine, which a pack may not carry",
                             hint="drop the flag (docs/security.md: what a pack may contain)")
    check_output(out_file, "-o")  # before the replay: a pack that cannot be written is refused at once
    request = replace(request, as_run=False)  # the expected outcome: replayed as the pack's repro run will
    kind, modules = resolve(request.source, request.modules, request.include_all, request.process)
    run = run_of(request.source) if kind == "bundle" else None
    prepared = prepare(request, (kind, modules))
    replayed = execute_replay(prepared, out_root, argv, reporter)
    left_out = [LeftOut(name=m.name, id=m.id, why=why) for m in replayed.record.modules if (why := tool_failure(m))]
    if len(left_out) == len(replayed.record.modules):
        raise EnvironmentMissing(f"nothing to pack: xlatools cannot replay any module of {request.source} here ("
                                 + "; ".join(f"{m.label}: {m.why}" for m in left_out)[:1500] + ")",
                                 hint="a pack records what a module does, never what xlatools could not do")
    skipped = {(m.id, m.name) for m in left_out}
    files, entries = _pack_files([m for m in modules if (m.id, m.name) not in skipped], request.source, run)
    if inputs_file:  # travels inside the pack (reduce's minimal modules need their exact inputs)
        files[PACKED_INPUTS] = Path(str(request.inputs)).read_bytes()
    index = _index(prepared, replayed, run, entries)  # with the run's settings the replay adopted
    index.left_out = left_out
    index.oracle = oracle
    if inputs_file:
        index.replay.inputs = PACKED_INPUTS
    check_packed(index.replay, out_file)  # never write a pack that its own `repro run` would refuse
    files["pack.json"] = json.dumps(redact(to_json(index)), indent=2, sort_keys=True).encode()  # a pack travels
    return PackResult(path=write_pack(files, out_file), replayed=replayed, index=index)


def _request_of(index: PackIndex, archive: Path, python: str, references: list[str]) -> ReplayRequest:
    """The replay a pack asks for: its options (every field of PackedOptions is one of ReplayRequest),
    with the reference interpreters of that jaxlib found here."""
    packed = index.replay
    request = ReplayRequest(source=archive, python=python, name=f"repro-{archive.name.split('.')[0]}",
                            reference_pythons=references, **{f.name: copy(getattr(packed, f.name)) for f in fields(packed)})
    request.precision = packed.precision or PrecisionMode.AS_COMPILED  # a pack older than --precision: as it was made
    return request


def run_pack(pack_path: str | Path, python: str | None = None, out_root: str | Path = "artifacts",
             match: PackMatch | str = PackMatch.CLASS, argv: list[str] | None = None, same_jaxlib: bool = False,
             reporter: Reporter | None = None, reference_pythons: list[str] | None = None,
             nondeterministic: bool = False) -> ReproResult:
    """Replay a repro pack in `python` (default: this interpreter) into a replay bundle under `out_root`.

    Raises PackError (exit 2) for a damaged or unsafe pack; returns nothing-to-reproduce (exit 5; what the
    replay gave is said) for a pack that records no failure; returns cannot-run when this
    interpreter cannot replay it (no jax, no GPU, an XLA flag or module this jaxlib does not know,
    or, with `same_jaxlib`, a jaxlib other than the pack's). `reporter`: the progress of the
    replay (default: on stderr). `nondeterministic`: GPU compiles without the deterministic mode the pack asks for."""
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
        check_packed(index.replay, archive)
        modules = modules_of(index, unpacked, members, archive)
        references, missing = pack_references(index, reference_pythons or [])
        if missing:
            return ReproResult(outcome=ReproOutcome.CANNOT_RUN, reason=missing)
        request = _request_of(index, archive, resolve_python(python), [resolve_python(p) for p in references])
        if nondeterministic:
            request.deterministic = False
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
        result = healthy_answer(index.modules, verdict(index.modules, replayed.record.modules, match), index.oracle)
        result.bundle = bundle
        return result
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
