"""Repro packs: the smallest self-contained reproducer of a bundle's modules, and replaying one.

`build_pack` replays the chosen modules once (the expected outcome: outcome class,
fingerprint of the optimised HLO, output digests) and packs them with the program
copy, flags, redacted environment, versions and profile. `run_pack` unpacks a pack
safely into the output folder, replays it with the pack's own options, and answers
reproduced / not-reproduced (with what differs) / cannot-run, or nothing-to-reproduce for a pack
whose modules all ran ok when it was made (a healthy run's pack records no failure); that answer is
repro_verdict.py's.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from copy import copy
from dataclasses import replace, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, cast

from xlatools import __version__
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.fsutil import check_output, make_dir
from xlatools.records.replay import (
    PACK_FORMAT,
    PACKED_INPUTS,
    LeftOut,
    PackedOptions,
    PackIndex,
    PackReference,
    PackRun,
    ReplayManifest,
)
from xlatools.records.run import RunManifest
from xlatools.replay.execute import PreparedReplay, ReplayResult
from xlatools.replay.pack import extract, member_path, verify, write_pack
from xlatools.replay.pack_index import check_packed, modules_of, pack_references, read_index
from xlatools.replay.plan import INPUT_MODES, ReplayRequest
from xlatools.replay.outcome import tool_failure
from xlatools.replay.repro_verdict import ReproResult, expected_of, healthy_answer, verdict
from xlatools.replay.sources import ModuleSource
from xlatools.vocab import PackMatch, PrecisionMode, ReproOutcome, choices

if TYPE_CHECKING:
    from xlatools.console import Reporter

FORMAT = PACK_FORMAT
Entries = dict[tuple[int | None, str], dict[str, str]]  # module (id, name) -> form -> path inside the pack


@dataclass(kw_only=True)
class PackResult:
    """What `repro pack` made: the pack, the replay that recorded its expected outcomes, its index."""

    path: Path
    replayed: ReplayResult
    index: PackIndex


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
    packed_run = (
        PackRun(
            program=run.program,
            jax=run.jax,
            xla_flags=list(run.xla_flags),
            env_changes=list(run.env_changes),
            platform=run.platform,
            presets=list(run.presets),
        )
        if run
        else None
    )
    modules = []
    for module in replayed.record.modules:
        if (module.id, module.name) not in entries:  # left out
            continue
        expected = expected_of(module)
        expected.files = entries[(module.id, module.name)]
        modules.append(expected)
    references = [PackReference(python=p, jaxlib=prepared.targets[p].jaxlib) for p in request.reference_pythons]
    return PackIndex(
        format=FORMAT,
        xlatools_version=__version__,
        source=Path(request.source).name,
        replay=options,
        versions=versions,
        run=packed_run,
        modules=modules,
        reference_pythons=references,
    )


def build_pack(
    request: ReplayRequest,
    out_file: Path,
    out_root: Path,
    argv: list[str],
    reporter: Reporter,
    oracle: str | None = None,
) -> PackResult:
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
            raise UsageError(
                f"repro pack: --xla-flag {flag}: names a path of this machine, which a pack may not carry",
                hint="drop the flag (docs/security.md: what a pack may contain)",
            )
    check_output(out_file, "-o")  # before the replay: a pack that cannot be written is refused at once
    request = replace(request, as_run=False)  # the expected outcome: replayed as the pack's repro run will
    kind, modules = resolve(request.source, request.modules, request.include_all, request.process)
    run = run_of(request.source) if kind == "bundle" else None
    prepared = prepare(request, (kind, modules))
    replayed = execute_replay(prepared, out_root, argv, reporter)
    left_out = [LeftOut(name=m.name, id=m.id, why=why) for m in replayed.record.modules if (why := tool_failure(m))]
    if len(left_out) == len(replayed.record.modules):
        raise EnvironmentMissing(
            f"nothing to pack: xlatools cannot replay any module of {request.source} here ("
            + "; ".join(f"{m.label}: {m.why}" for m in left_out)[:1500]
            + ")",
            hint="a pack records what a module does, never what xlatools could not do",
        )
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
    request = ReplayRequest(
        source=archive,
        python=python,
        name=stem if (stem := archive.name.split(".")[0]).startswith("repro") else f"repro-{stem}",  # not repro-repro
        reference_pythons=references,
        **{f.name: copy(getattr(packed, f.name)) for f in fields(packed)},
    )
    request.precision = packed.precision or PrecisionMode.AS_COMPILED  # a pack older than --precision: as it was made
    return request


def reference_names(index: PackIndex) -> dict[str, str]:
    """How a pack's reference labels are shown: `reference-python-1 (jaxlib 0.6.1)`."""
    return {
        f"reference-python-{n}": f"reference-python-{n} (jaxlib {r.jaxlib})"
        for n, r in enumerate(index.reference_pythons, 1)
        if r.jaxlib
    }


def other_references(index: PackIndex, request: ReplayRequest, prepared: PreparedReplay) -> str | None:
    """Why the reference interpreters given are not the ones the pack's outcomes were judged against (another
    jaxlib), or None: a mismatch against reference R is reproduced only by a mismatch against R."""
    problems = [
        f"reference-python-{n}: the pack's outcomes were judged against jaxlib {recorded.jaxlib}; {given} has "
        f"jaxlib {prepared.targets[given].jaxlib}"
        for n, (recorded, given) in enumerate(zip(index.reference_pythons, request.reference_pythons), 1)
        if recorded.jaxlib and prepared.targets[given].jaxlib != recorded.jaxlib
    ]
    if not problems:
        return None
    return "; ".join(problems) + ": give --reference-python an interpreter with the jaxlib the pack names"


def judged_otherwise(packed: PackedOptions, used: ReplayRequest | None) -> str | None:
    """Why the replay was not judged as the pack's outcomes were (tolerances, precision rule, inputs), or None."""
    if used is None:
        return "the replay recorded no plan"
    recorded = {
        "atol": packed.atol,
        "rtol": packed.rtol,
        "precision": packed.precision or PrecisionMode.AS_COMPILED,
        "seed": packed.seed,
    }
    differs = [f"{k} {getattr(used, k)} (the pack's: {v})" for k, v in recorded.items() if getattr(used, k) != v]
    return f"replayed with {', '.join(differs)}: not judged as the pack was" if differs else None


def _answer(index: PackIndex, replayed: ReplayManifest, match: PackMatch) -> ReproResult:
    """The pack's expected outcomes against its replay here, judged as they were recorded."""
    referenced = bool(index.reference_pythons or index.replay.references)
    judged = judged_otherwise(index.replay, replayed.plan.request if replayed.plan else None)
    result = (
        ReproResult(outcome=ReproOutcome.CANNOT_RUN, reason=judged)
        if judged
        else verdict(index.modules, replayed.modules, match, reference_names(index), referenced)
    )
    result = healthy_answer(index.modules, result, index.oracle, referenced)
    result.bundle = str(replayed.bundle)
    return result


def run_pack(
    pack_path: str | Path,
    python: str | None = None,
    out_root: str | Path = "artifacts",
    match: PackMatch | str = PackMatch.CLASS,
    argv: list[str] | None = None,
    same_jaxlib: bool = False,
    reporter: Reporter | None = None,
    reference_pythons: list[str] | None = None,
    nondeterministic: bool = False,
) -> ReproResult:
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
            return ReproResult(
                outcome=ReproOutcome.CANNOT_RUN, reason=exc.message + (f" ({exc.hint})" if exc.hint else "")
            )
        wanted, have = index.versions.jaxlib if index.versions else None, prepared.targets[request.python].jaxlib
        refused = (
            f"the pack names jaxlib {wanted}; {request.python} has {have}"
            if same_jaxlib and wanted != have
            else other_references(index, request, prepared)
        )
        if refused:
            return ReproResult(outcome=ReproOutcome.CANNOT_RUN, reason=refused)
        replayed = execute_replay(prepared, out_root, argv or ["repro", "run", str(archive)], reporter or Reporter())
        shutil.move(str(unpacked), str(Path(replayed.record.bundle or "") / "pack"))
        return _answer(index, replayed.record, match)
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
