"""The reduce bundle: reduced.hlo.txt, inputs.npz, outputs, rounds.json, repro pack, ISSUE.md, manifest.

execute_reduce() is the one bundle lifecycle of `xlatools reduce`: a running manifest first,
then the final one (ok / failed / interrupted) with the file index. A bad input (the oracle
does not hold for the input) removes the still-empty bundle again, so exit 2 leaves nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from xlatools import __version__
from xlatools.errors import Interrupted, UsageError
from xlatools.reduce.execute import Outcome, Prepared, run_reduction
from xlatools.reduce.hlo_text import print_module
from xlatools.reduce.issue import IssueFacts, commands, render_issue

MANIFEST_SCHEMA = "xlatools.reduce/1"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _literals(path: Path, label: str) -> str:
    """The `label` part (input or output) of replay's literals.txt."""
    text, keep, out = _read(path), False, []
    for line in text.splitlines():
        if line.startswith(("input ", "output ")):
            keep = line.startswith(label + " ")
        if keep:
            out.append(line)
    return "\n".join(out)


def _copy(src: Path, dest: Path) -> bool:
    if src.is_file():
        shutil.copyfile(src, dest)
        return True
    return False


def write_results(outcome: Outcome, folder: Path, argv: list[str]) -> dict[str, Any]:
    """Every result file into the bundle folder; the summary the manifest and --json carry."""
    from xlatools.fsutil import atomic_write_json, atomic_write_text

    plan, request = outcome.plan, outcome.plan.request
    reduced = print_module(outcome.best.module, metadata=False)
    atomic_write_text(folder / "reduced.hlo.txt", reduced)
    atomic_write_text(folder / "original.hlo.txt", print_module(outcome.original.module))
    recheck = outcome.recheck_dir
    _copy(recheck / "inputs.npz", folder / "inputs.npz")
    _copy(recheck / "test" / "outputs.npz", folder / "outputs-test.npz")
    _copy(recheck / "reference" / "outputs.npz", folder / "outputs-reference.npz")
    atomic_write_json(folder / "rounds.json", {"rounds": outcome.rounds, "counters": outcome.counters})
    pack, pack_outcome = _pack(outcome, folder, argv)
    test_flags = plan.test.xla_flags
    facts = IssueFacts(
        module_name=plan.module.label, oracle=plan.oracle.describe(), oracle_kind=plan.oracle.kind,
        instructions_before=outcome.original.module.instruction_count(),
        instructions_after=outcome.best.module.instruction_count(), reduced_hlo=reduced,
        verdict_reason=outcome.rechecks[-1].reason, figures=outcome.rechecks[-1].figures,
        test_versions=outcome.versions.get("test", {}), reference_versions=outcome.versions.get("reference"),
        platform=(outcome.versions.get("test", {}).get("device") or {}).get("platform", plan.test.platform),
        xla_flags=test_flags, disabled_passes=request.disable_passes, culprit_pass=request.culprit_pass,
        inputs_text=_literals(recheck / "test" / "literals.txt", "input"),
        test_outputs_text=_literals(recheck / "test" / "literals.txt", "output"),
        reference_outputs_text=_literals(recheck / "reference" / "literals.txt", "output"),
        rechecks=", ".join(v.label for v in outcome.rechecks),
        commands=commands(test_flags, plan.test.platform if plan.test.platform != "auto" else "cpu",
                          "cpu" if request.references else ("python" if request.reference_pythons else None),
                          "repro.tar.gz" if pack else "(no pack)", pack_outcome))
    atomic_write_text(folder / "ISSUE.md", render_issue(facts))
    return {"instructions_before": facts.instructions_before, "instructions_after": facts.instructions_after,
            "oracle": plan.oracle.kind, "oracle_calls": outcome.counters.get("oracle_calls"),
            "candidates": outcome.counters.get("candidates"), "cache_hits": outcome.counters.get("cache_hits"),
            "unparsable": outcome.counters.get("unparsable"), "seconds": outcome.seconds, "stopped": outcome.stopped,
            "flaky": outcome.flaky, "rechecks": [v.to_json() for v in outcome.rechecks],
            "verdict": outcome.rechecks[-1].reason, "state": str(outcome.state_folder),
            "files": {name: str(folder / name) for name in ("reduced.hlo.txt", "inputs.npz", "ISSUE.md", "rounds.json",
                                                            "repro.tar.gz") if (folder / name).is_file()}}


def _pack(outcome: Outcome, folder: Path, argv: list[str]) -> tuple[Path | None, str]:
    """A repro pack of the reduced module with its inputs (its expected outcome recorded by one replay)."""
    from xlatools.replay.plan import ReplayRequest
    from xlatools.replay.repro import build_pack

    plan, request = outcome.plan, outcome.plan.request
    if not (folder / "inputs.npz").is_file():
        return None, "-"
    replay = ReplayRequest(source=folder / "reduced.hlo.txt", python=plan.test.python, inputs=str(folder / "inputs.npz"),
                           references=list(request.references), atol=request.atol, rtol=request.rtol,
                           xla_flags=list(request.xla_flags), disable_passes=list(request.disable_passes),
                           platform=request.platform, name="reduced")
    path, manifest, _ = build_pack(replay, folder / "repro.tar.gz", folder / "replays", argv + ["(repro pack)"])
    return path, ", ".join(m["outcome"] for m in manifest["modules"])


def execute_reduce(prepared: Prepared, out_root: Path, argv: list[str], progress: Callable[[str], None],
                   fresh: bool = False) -> tuple[dict[str, Any], int]:
    """Reduce into a fresh bundle: (final manifest, exit code). Exit 1 when the result is flaky."""
    from xlatools.bundle import Bundle, host_info, utc_now
    from xlatools.proctree import sigterm_as_interrupt

    plan = prepared.plan
    bundle = Bundle.create(Path(os.path.abspath(out_root)), plan.name, "reduce")  # type: ignore[arg-type]
    base = {"status": "running", "manifest_schema": MANIFEST_SCHEMA, "kind": "reduce", "xlatools_version": __version__,
            "command": "xlatools " + " ".join(argv), "argv": argv, "bundle": str(bundle.path), "host": host_info(),
            "source": str(plan.request.source), "plan": plan.to_json(), "started": utc_now()}
    bundle.write_manifest(base)
    try:
        with sigterm_as_interrupt():
            outcome = run_reduction(prepared, out_root, progress, fresh)
            result = write_results(outcome, bundle.path, argv)
    except UsageError:
        shutil.rmtree(bundle.path, ignore_errors=True)  # the input was refused: no bundle
        raise
    except (Interrupted, KeyboardInterrupt):
        bundle.write_manifest({**base, "status": "interrupted", "exit_code": 130, "finished": utc_now(),
                               "files": bundle.file_index()})
        raise Interrupted(f"interrupted; the state is kept: run the same command again to continue "
                          f"(bundle {bundle.path})") from None
    except BaseException as exc:
        bundle.write_manifest({**base, "status": "failed", "error": str(exc), "finished": utc_now()})
        raise
    code = 1 if outcome.flaky else 0
    final = {**base, "status": "ok" if code == 0 else "failed", "exit_code": code, "finished": utc_now(),
             "result": result}
    if outcome.flaky:
        final["error"] = "flaky: the reduced module was not interesting on every re-check"
    from xlatools.fsutil import atomic_write_text

    atomic_write_text(bundle.path / "summary.json", json.dumps(result, indent=2) + "\n")
    final["files"] = bundle.file_index()
    bundle.write_manifest(final)
    return final, code
