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
import secrets
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from xlatools import __version__
from xlatools.errors import EnvironmentMissing, UsageError
from xlatools.replay.pack import PackError, extract, write_pack
from xlatools.replay.plan import ReplayRequest
from xlatools.replay.records import missing_kernel, tool_failure
from xlatools.replay.sources import ModuleSource

FORMAT = "xlatools.repro/1"
Match = Literal["class", "outputs", "fingerprint"]
MATCHES = ("class", "outputs", "fingerprint")
# Replay options a pack carries (a reference interpreter's path would not travel, so only --reference cpu).
PACKED_OPTIONS = ("source_from", "inputs", "seed", "atol", "rtol", "xla_flags", "disable_passes", "no_opt",
                  "platform", "references", "env")
EXIT_CODES = {"reproduced": 1, "not-reproduced": 0, "cannot-run": 3}


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
    why = tool_failure(g)
    if why:  # never a verdict: xlatools could not do its part here
        return False, [], f"{label}: {why}"
    kernel = missing_kernel(g)
    if kernel and e["outcome"] != "compile-error":
        return False, [], f"{label}: this jaxlib has no custom-call target {kernel}, which the module calls (a kernel of the jaxlib that made it)"
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
    differing = sum(1 for e in expected if not _compare_module(e, by_key.get((e["id"], e["name"])), match)[0])
    return ReproOutcome("not-reproduced", f"{differing} of {len(expected)} module(s) did not give their expected outcome "
                        f"(compared: {match})", differences, modules=pairs)


def _run_manifest(source: Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(source) / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
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
    kind, modules = resolve(request.source, request.modules, request.include_all)
    run = _run_manifest(request.source) if kind == "bundle" else {}
    prepared = prepare(request, (kind, modules))
    manifest, _, rendered = execute_replay(prepared, out_root, argv)
    left_out = {(m["id"], m["name"]): why for m in manifest["modules"] if (why := tool_failure(m))}
    packed = [m for m in manifest["modules"] if (m["id"], m["name"]) not in left_out]
    if not packed:
        raise EnvironmentMissing(f"nothing to pack: xlatools cannot replay any module of {request.source} here ("
                                 + "; ".join(f"{i:04d} {n}: {why}" for (i, n), why in left_out.items())[:1500] + ")",
                                 hint="a pack records what a module does, never what xlatools could not do")
    modules = [m for m in modules if (m.id, m.name) not in left_out]
    manifest = {**manifest, "modules": packed,
                "left_out": [{"id": i, "name": n, "why": why} for (i, n), why in left_out.items()]}
    files, entries = _pack_files(modules, request.source, run)
    target = prepared.targets[request.python]
    meta = {
        "format": FORMAT, "xlatools_version": __version__, "source": Path(request.source).name,
        "replay": {k: getattr(prepared.plan.request, k) for k in PACKED_OPTIONS},  # with the run's settings
        "versions": {"python": target.python_version, "jax": target.jax, "jaxlib": target.jaxlib,
                     "plugins": target.plugins, "backend": target.backend, "devices": target.devices},
        "run": {k: run.get(k) for k in ("program", "jax", "xla_flags", "env_changes", "platform", "presets")} if run else None,
        "modules": [{**expected_of(m), "files": entries[(m["id"], m["name"])]} for m in manifest["modules"]],
        "left_out": manifest["left_out"],
        "reference_pythons": [{"python": p, "jaxlib": prepared.targets[p].jaxlib} for p in request.reference_pythons],
    }
    files["pack.json"] = json.dumps(meta, indent=2, sort_keys=True).encode()
    return write_pack(files, out_file), manifest, rendered


def _modules_of(meta: dict[str, Any], root: Path) -> list[ModuleSource]:
    modules = []
    for entry in meta.get("modules", []):
        paths = {kind: root / rel for kind, rel in entry.get("files", {}).items() if kind in ("text", "proto", "snapshot", "mlir")}
        if not paths:
            raise PackError(f"pack.json: module {entry.get('name')} names no file")
        modules.append(ModuleSource(name=entry["name"], id=entry.get("id"), **paths))
    if not modules:
        raise PackError("pack.json lists no module")
    return modules


def pack_references(meta: dict[str, Any], given: list[str]) -> tuple[list[str], str | None]:
    """The reference interpreters of a pack made with --reference-python: those given, else the recorded paths
    where they still exist; (interpreters, why it cannot run) when one is missing."""
    recorded = meta.get("reference_pythons") or []
    if given or not recorded:
        if recorded and len(given) != len(recorded):
            return [], f"the pack compares with {len(recorded)} reference interpreter(s); --reference-python gave {len(given)}"
        return list(given), None
    missing = [r for r in recorded if not os.path.exists(r["python"])]
    if missing:
        return [], ("the pack compares with jaxlib " + ", ".join(f"{r['jaxlib']} ({r['python']})" for r in missing)
                    + ", not here: give --reference-python with that jaxlib")
    return [r["python"] for r in recorded], None


def read_meta(root: Path, archive: Path) -> dict[str, Any]:
    try:
        meta = json.loads((root / "pack.json").read_text())
    except (OSError, ValueError) as exc:
        raise PackError(f"{archive}: no readable pack.json ({exc})") from None
    if meta.get("format") != FORMAT:
        raise PackError(f"{archive}: pack format {meta.get('format')!r}, this xlatools reads {FORMAT}",
                        hint="replay it with the xlatools version that wrote it")
    return meta


def run_pack(pack_path: str | Path, python: str | None = None, out_root: str | Path = "artifacts",
             match: Match = "class", argv: list[str] | None = None, same_jaxlib: bool = False,
             reference_pythons: list[str] | None = None) -> ReproOutcome:
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
    out_root.mkdir(parents=True, exist_ok=True)
    unpacked = out_root / f".unpack-{secrets.token_hex(4)}"
    try:
        extract(archive, unpacked)
        root = unpacked / "repro" if (unpacked / "repro").is_dir() else unpacked
        meta = read_meta(root, archive)
        options = {k: v for k, v in meta.get("replay", {}).items() if k in PACKED_OPTIONS}
        references, missing = pack_references(meta, reference_pythons or [])
        if missing:
            return ReproOutcome("cannot-run", missing)
        request = ReplayRequest(source=archive, python=resolve_python(python), name=f"repro-{archive.name.split('.')[0]}",
                                reference_pythons=[resolve_python(p) for p in references], **options)
        try:
            prepared = prepare(request, ("pack", _modules_of(meta, root)))
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
