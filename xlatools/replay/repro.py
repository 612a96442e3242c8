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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from xlatools import __version__
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.fsutil import check_output, make_dir
from xlatools.redact import redact
from xlatools.replay.pack import PackError, extract, member_path, verify, write_pack
from xlatools.replay.plan import ReplayRequest
from xlatools.replay.sources import ModuleSource

FORMAT = "xlatools.repro/1"
Match = Literal["class", "outputs", "fingerprint"]
MATCHES = ("class", "outputs", "fingerprint")
# Replay options a pack carries (a reference interpreter's path would not travel, so only --reference cpu).
PACKED_OPTIONS = ("source_from", "inputs", "seed", "atol", "rtol", "xla_flags", "disable_passes", "no_opt",
                  "platform", "references")
EXIT_CODES = {"reproduced": 1, "not-reproduced": 0, "cannot-run": 3}
SOURCE_KINDS = ("text", "proto", "snapshot", "mlir")
# XLA flags whose value names a file or folder (--xla_dump_to, --xla_gpu_cuda_data_dir, ..._from, ..._file):
# a pack carrying one would make the replaying machine read or write where the pack says.
PATH_FLAG = re.compile(r"_(to|dir|path|file|from|directory)$")


@dataclass
class ReproOutcome:
    """The answer of `repro run` (and of `bisect --replay PACK`: reproduced = bad, cannot-run = skip)."""

    outcome: Literal["reproduced", "not-reproduced", "cannot-run"]
    reason: str
    differences: list[str] = field(default_factory=list)
    bundle: str | None = None
    modules: list[dict[str, Any]] = field(default_factory=list)  # per module: expected and got

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "exit_code": self.exit_code}


def expected_of(module: dict[str, Any]) -> dict[str, Any]:
    """What a pack records of one replayed module (from a replay manifest's module entry)."""
    test = module["runs"][0] if module.get("runs") else {}
    return {"name": module["name"], "id": module["id"], "outcome": module["outcome"],
            "failed_run": module.get("failed_run"), "phase": test.get("phase"), "signal": test.get("signal"),
            "fingerprint": module.get("fingerprint"), "outputs": [o["sha256"] for o in module.get("outputs", [])]}


def _compare_module(e: dict[str, Any], g: dict[str, Any] | None, match: str) -> tuple[bool, list[str], str | None]:
    """(same under `match`, differences, why it cannot run here or None)."""
    label = e["name"] if e.get("id") is None else f"{e['id']:04d} {e['name']}"
    if g is None:
        return False, [], f"{label}: was not replayed"
    got = expected_of(g)
    if got["outcome"] == "compile-error" and got["phase"] == "load" and e["outcome"] != "compile-error":
        return False, [], f"{label}: this jaxlib cannot load the module ({(g['runs'][0].get('message') or '')[:200]})"
    diffs, same = [], True
    if got["outcome"] != e["outcome"]:
        diffs.append(f"{label}: outcome {got['outcome']}, expected {e['outcome']}")
        same = False
    if e.get("fingerprint") and got["fingerprint"] != e["fingerprint"]:
        diffs.append(f"{label}: fingerprint {str(got['fingerprint'])[:12]}, expected {e['fingerprint'][:12]}")
        same = same and match != "fingerprint"
    if e.get("outputs") and got["outputs"] != e["outputs"]:
        diffs.append(f"{label}: output digests differ ({len(got['outputs'])} outputs, expected {len(e['outputs'])})")
        same = same and match != "outputs"
    return same, diffs, None


def verdict(expected: list[dict[str, Any]], got: list[dict[str, Any]], match: str = "class") -> ReproOutcome:
    """Pure: the pack's expected modules against a replay's modules."""
    by_key = {(m["id"], m["name"]): m for m in got}
    differences, cannot, all_same = [], [], True
    for e in expected:
        same, diffs, why = _compare_module(e, by_key.get((e["id"], e["name"])), match)
        differences += diffs
        all_same = all_same and same
        if why:
            cannot.append(why)
    pairs = [{"expected": e, "got": expected_of(by_key[(e["id"], e["name"])]) if (e["id"], e["name"]) in by_key else None}
             for e in expected]
    if cannot:
        return ReproOutcome("cannot-run", "; ".join(cannot), differences, modules=pairs)
    if all_same:
        return ReproOutcome("reproduced", f"every module gave its expected outcome (compared: {match})", differences,
                            modules=pairs)
    return ReproOutcome("not-reproduced", "; ".join(d for d in differences) or "outcome differs", differences,
                        modules=pairs)


def _run_manifest(source: Path) -> dict[str, Any]:
    """The run a bundle records ({} for other kinds); a manifest that cannot be read is a damaged bundle."""
    path = Path(source) / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: cannot read the bundle's manifest ({type(exc).__name__})",
                         hint="a damaged bundle makes a pack without its run; repair or re-run it") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the manifest is a JSON {type(data).__name__}, not an object")
    return data if data.get("kind") == "run" else {}


def _pack_files(modules: list[ModuleSource], source: Path, run: dict[str, Any]) -> tuple[dict[str, bytes], dict]:
    files: dict[str, bytes] = {}
    entries = {}
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
    if run.get("profile"):
        files["profile.json"] = json.dumps(run["profile"], indent=2, sort_keys=True).encode()
        lock = Path(run["profile"].get("file") or "").parent / "xlatools.lock"  # `pin resolve` writes it beside the profile
        if run["profile"].get("file") and lock.is_file():
            files["xlatools.lock"] = lock.read_bytes()
    return files, entries


def build_pack(request: ReplayRequest, out_file: Path, out_root: Path, argv: list[str]) -> tuple[Path, dict[str, Any], str]:
    """Replay `request.source` once (the expected outcome) and write the pack: (pack, replay manifest, table)."""
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.replay.sources import resolve

    if request.inputs not in (None, "random", "zeros", "ones"):
        raise UsageError("repro pack: --inputs FILE does not travel in a pack", hint="use random, zeros or ones")
    check_output(out_file, "-o")  # before the replay: a pack that cannot be written is refused at once
    kind, modules = resolve(request.source, request.modules, request.include_all)
    run = _run_manifest(request.source) if kind == "bundle" else {}
    prepared = prepare(request, (kind, modules))
    manifest, _, rendered = execute_replay(prepared, out_root, argv)
    files, entries = _pack_files(modules, request.source, run)
    target = prepared.targets[request.python]
    meta = {
        "format": FORMAT, "xlatools_version": __version__, "source": Path(request.source).name,
        "replay": {k: getattr(request, k) for k in PACKED_OPTIONS},
        "versions": {"python": target.python_version, "jax": target.jax, "jaxlib": target.jaxlib,
                     "plugins": target.plugins, "backend": target.backend, "devices": target.devices},
        "run": {k: run.get(k) for k in ("program", "jax", "xla_flags", "env_changes", "platform", "presets")} if run else None,
        "modules": [{**expected_of(m), "files": entries[(m["id"], m["name"])]} for m in manifest["modules"]],
    }
    files["pack.json"] = json.dumps(redact(meta), indent=2, sort_keys=True).encode()  # a pack travels: no secrets
    return write_pack(files, out_file), manifest, rendered


def _modules_of(meta: dict[str, Any], root: Path, members: dict, archive: Path) -> list[ModuleSource]:
    """The modules pack.json lists, each file resolved inside the verified member list (member_path)."""
    modules = []
    for index, entry in enumerate(meta["modules"]):
        files = entry.get("files")
        if not isinstance(files, dict) or not files or not set(files) <= set(SOURCE_KINDS):
            raise PackError(f"{archive}: pack.json [modules[{index}].files] must map {', '.join(SOURCE_KINDS)} to files "
                            "of the pack", hint="the pack is damaged or was not written by `xlatools repro pack`")
        paths = {kind: member_path(root, members, rel, f"modules[{index}].files.{kind}", archive)
                 for kind, rel in files.items()}
        modules.append(ModuleSource(name=entry["name"], id=entry.get("id"), **paths))
    if not modules:
        raise PackError(f"{archive}: pack.json lists no module")
    return modules


def _check_meta(meta: Any, archive: Path) -> None:
    """The shape of pack.json, where a wrong one would stop a replay halfway (exit 2 naming the key)."""
    def bad(key: str, expected: str) -> PackError:
        return PackError(f"{archive}: pack.json [{key}] must be {expected}",
                         hint="the pack is damaged or was not written by `xlatools repro pack`")

    if not isinstance(meta, dict):
        raise bad("(top level)", "an object")
    if not isinstance(meta.get("modules"), list):
        raise bad("modules", "a list")
    for index, entry in enumerate(meta["modules"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("outcome"), str):
            raise bad(f"modules[{index}]", "an object with a name and an outcome")
        if entry.get("id") is not None and (not isinstance(entry["id"], int) or isinstance(entry["id"], bool)):
            raise bad(f"modules[{index}].id", "a whole number or null")
        for key in ("fingerprint", "failed_run", "phase", "signal"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise bad(f"modules[{index}].{key}", "a string or null")
        if not isinstance(entry.get("outputs", []), list) or not all(isinstance(o, str) for o in entry.get("outputs", [])):
            raise bad(f"modules[{index}].outputs", "a list of digests")
    for key in ("replay", "versions"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise bad(key, "an object")


def _options(meta: dict[str, Any], archive: Path) -> dict[str, Any]:
    """The replay options a pack carries, checked: a pack may not name files or interpreters of the
    machine that replays it (inputs from a file, a reference interpreter, flags whose value is a path)."""
    from xlatools.replay.plan import INPUT_MODES, REFERENCES
    from xlatools.run.flags import flag_name

    options = {k: v for k, v in (meta.get("replay") or {}).items() if k in PACKED_OPTIONS}
    problems = []
    if options.get("inputs") not in (None, *INPUT_MODES):
        problems.append(f"inputs {options['inputs']!r} (a pack carries random, zeros or ones, never a file)")
    references = options.get("references", [])
    if not isinstance(references, list) or not all(r in REFERENCES for r in references):
        problems.append(f"references {references!r} (only {', '.join(REFERENCES)})")
    for key in ("xla_flags", "disable_passes"):
        value = options.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"{key} {value!r} (a list of strings)")
        elif key == "xla_flags":
            problems += [f"xla_flags {f!r} (a flag that names a path of the machine replaying it)"
                         for f in value if PATH_FLAG.search(flag_name(f))]
    for key in ("atol", "rtol"):
        value = options.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            problems.append(f"{key} {value!r} (a finite number >= 0)")
    for key, kind in (("seed", int), ("no_opt", bool), ("platform", str), ("source_from", str)):
        if key in options and not isinstance(options[key], kind):
            problems.append(f"{key} {options[key]!r}")
    if problems:
        raise PackError(f"{archive}: pack.json [replay] holds what a pack may not: {'; '.join(problems)}",
                        hint="see docs/security.md: what a pack may contain")
    return options


def read_meta(root: Path, archive: Path) -> dict[str, Any]:
    try:
        meta = json.loads((root / "pack.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise PackError(f"{archive}: no readable pack.json ({type(exc).__name__}: {str(exc)[:200]})") from None
    _check_meta(meta, archive)
    if meta.get("format") != FORMAT:
        raise PackError(f"{archive}: pack format {meta.get('format')!r}, this xlatools reads {FORMAT}",
                        hint="replay it with the xlatools version that wrote it")
    return meta


def run_pack(pack_path: str | Path, python: str | None = None, out_root: str | Path = "artifacts",
             match: Match = "class", argv: list[str] | None = None, same_jaxlib: bool = False) -> ReproOutcome:
    """Replay a repro pack in `python` (default: this interpreter) into a replay bundle under `out_root`.

    Raises PackError (exit 2) for a damaged or unsafe pack; returns cannot-run when this
    interpreter cannot replay it (no jax, no GPU, an XLA flag or module this jaxlib does not know,
    or, with `same_jaxlib`, a jaxlib other than the pack's)."""
    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.run.frontend_checks import UnknownFlags
    from xlatools.run.target import resolve_python

    if match not in MATCHES:
        raise UsageError(f"--match {match}: expected one of {', '.join(MATCHES)}")
    archive = Path(pack_path)
    out_root = Path(os.path.abspath(out_root))
    members = verify(archive)  # before anything is written: a damaged pack leaves no trace
    make_dir(out_root)
    unpacked = out_root / f".unpack-{secrets.token_hex(4)}"
    try:
        extract(archive, unpacked, members)
        meta = read_meta(unpacked, archive)
        request = ReplayRequest(source=archive, python=resolve_python(python), name=f"repro-{archive.name.split('.')[0]}",
                                **_options(meta, archive))
        modules = _modules_of(meta, unpacked, members, archive)
        try:
            prepared = prepare(request, ("pack", modules))
        except (UnknownFlags, EnvironmentMissing) as exc:
            return ReproOutcome("cannot-run", exc.message + (f" ({exc.hint})" if exc.hint else ""))
        wanted, have = (meta.get("versions") or {}).get("jaxlib"), prepared.targets[request.python].jaxlib
        if same_jaxlib and wanted != have:
            return ReproOutcome("cannot-run", f"the pack names jaxlib {wanted}; {request.python} has {have}")
        manifest, _, _ = execute_replay(prepared, out_root, argv or ["repro", "run", str(archive)])
        shutil.move(str(unpacked), str(Path(manifest["bundle"]) / "pack"))
        result = verdict(meta["modules"], manifest["modules"], match)
        result.bundle = manifest["bundle"]
        return result
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
