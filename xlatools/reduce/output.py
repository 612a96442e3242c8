"""The reduce bundle: reduced.hlo.txt, inputs.npz, outputs, rounds.json, repro pack, ISSUE.md, manifest.

execute_reduce() checks the oracle on the input first (a refused input is exit 2 and leaves no
bundle), then reduces inside the one bundle lifecycle (`bundle.bundle_session`, kind `reduce`):
the running manifest, the result files, and the final manifest (ok, or failed when the result is
flaky; Ctrl-C: interrupted, the state kept for the same command to continue).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.errors import EXIT_FAILED, Interrupted
from xlatools.records.base import to_json
from xlatools.records.reduce import ReduceManifest, ReduceResult
from xlatools.reduce.execute import Outcome, PreparedReduce, Reduction
from xlatools.reduce.hlo_text import print_module
from xlatools.reduce.issue import IssueFacts, commands, render_issue
from xlatools.vocab import Status

if TYPE_CHECKING:
    from xlatools.console import Reporter

RESULT_FILES = ("reduced.hlo.txt", "inputs.npz", "ISSUE.md", "rounds.json", "repro.tar.gz", "native-backtrace.txt")


@dataclass
class ReduceRun:
    record: ReduceManifest  # the final manifest
    exit_code: int


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _literals(path: Path, label: str) -> str:
    """The `label` part (input or output) of replay's literals.txt."""
    keep, out = False, []
    for line in _read(path).splitlines():
        if line.startswith(("input ", "output ")):
            keep = line.startswith(label + " ")
        if keep:
            out.append(line)
    return "\n".join(out)


def _copy(src: Path, dest: Path) -> None:
    if src.is_file():
        shutil.copyfile(src, dest)


def _facts(outcome: Outcome, reduced: str, pack: Packed, frames: list[str]) -> IssueFacts:
    plan, request, recheck = outcome.plan, outcome.plan.request, outcome.recheck_dir
    # A check script writes no literals: the pack's replay (same module, inputs and flags) printed them.
    literals = next((p for p in (recheck / "test" / "literals.txt", pack.literals) if p and p.is_file()), None)
    device = outcome.test.device
    reference = "cpu" if request.references else ("python" if request.reference_pythons else None)
    return IssueFacts(
        module_name=plan.module.label,
        oracle=plan.oracle.describe(),
        oracle_kind=plan.oracle.kind,
        instructions_before=outcome.original.module.instruction_count(),
        instructions_after=outcome.best.module.instruction_count(),
        reduced_hlo=reduced,
        verdict=outcome.rechecks[-1],
        test=outcome.test,
        reference=outcome.reference,
        platform=(device.platform if device else None) or plan.test.platform,
        xla_flags=plan.test.xla_flags,
        disabled_passes=request.disable_passes,
        culprit_pass=request.culprit_pass,
        inputs_text=_literals(literals, "input") if literals else "",
        test_outputs_text=_literals(recheck / "test" / "literals.txt", "output"),
        reference_outputs_text=_literals(recheck / "reference" / "literals.txt", "output"),
        rechecks=", ".join(v.interest for v in outcome.rechecks),
        native_frames=frames,
        original_frames=plan.oracle.crash.frames if plan.oracle.crash else [],
        commands=commands(
            plan.test.xla_flags,
            plan.test.platform if plan.test.platform != "auto" else "cpu",
            reference,
            "repro.tar.gz" if pack.path else "(no pack)",
            pack.outcome,
            oracle_shown=pack.oracle_shown,
        ),
    )


def write_results(outcome: Outcome, folder: Path, argv: list[str], reporter: Reporter) -> ReduceResult:
    """Every result file into the bundle folder; the result the manifest and --json carry."""
    from xlatools.fsutil import atomic_write_json, atomic_write_text
    from xlatools.redact import redact_text
    from xlatools.reduce.oracle import same_frames

    reduced = print_module(outcome.best.module, metadata=False)
    atomic_write_text(folder / "reduced.hlo.txt", reduced)
    atomic_write_text(folder / "original.hlo.txt", print_module(outcome.original.module))
    recheck = outcome.recheck_dir
    _copy(recheck / "inputs.npz", folder / "inputs.npz")
    _copy(recheck / "test" / "outputs.npz", folder / "outputs-test.npz")
    _copy(recheck / "reference" / "outputs.npz", folder / "outputs-reference.npz")
    atomic_write_json(
        folder / "rounds.json", {"rounds": to_json(outcome.rounds), "counters": to_json(outcome.counters)}
    )
    pack = _pack(outcome, folder, argv, reporter)
    facts = _facts(outcome, reduced, pack, _keep_backtrace(outcome, pack.crash, folder))
    atomic_write_text(folder / "ISSUE.md", redact_text(render_issue(facts)))  # flags and commands may carry credentials
    counters = outcome.counters
    return ReduceResult(
        instructions_before=facts.instructions_before,
        instructions_after=facts.instructions_after,
        oracle=outcome.plan.oracle.kind,
        oracle_calls=counters.oracle_calls,
        candidates=counters.candidates,
        cache_hits=counters.cache_hits,
        unparsable=counters.unparsable,
        seconds=outcome.seconds,
        stopped=outcome.stopped,
        ended=outcome.ended,
        flaky=outcome.flaky,
        rechecks=outcome.rechecks,
        verdict=outcome.rechecks[-1].reason,
        state=str(outcome.state_folder),
        files={name: str(folder / name) for name in RESULT_FILES if (folder / name).is_file()},
        same_frames=same_frames(facts.original_frames, facts.native_frames) if facts.original_frames else None,
    )


def _keep_backtrace(outcome: Outcome, crash: Path | None, folder: Path) -> list[str]:
    """native-backtrace.txt of the reduced module when the re-checks saw it die by a signal; its top frames.

    It comes from the pack's replay: a one-shot replay job (replay.jobs.run_job, crash capture on) of the
    reduced module with the same interpreter, flags and inputs as the re-checks. The re-checks and the
    search run in long-lived workers without capture, so a crashing candidate never waits for gdb and
    no reduction pays an extra jax start-up for a capturing worker."""
    from xlatools.debug.crash import FILE, crashing_frames

    seen = outcome.rechecks[-1].failure
    if crash is None or seen is None or not seen.signal or not crash.is_file():
        return []
    shutil.copyfile(crash, folder / FILE)
    return crashing_frames(_read(folder / FILE))


@dataclass
class Packed:
    """The reduced module's repro pack, as ISSUE.md tells of it."""

    path: Path | None = None
    outcome: str = "-"  # the outcome its replay recorded
    crash: Path | None = None  # the native backtrace that replay left if the module crashed
    literals: Path | None = None  # that replay's literals.txt (inputs and outputs)
    oracle_shown: bool = True  # the recorded outcome shows what the oracle judged (False: ok where it said bad)


def _pack(outcome: Outcome, folder: Path, argv: list[str], reporter: Reporter) -> Packed:
    """A repro pack of the reduced module with its inputs (its expected outcome recorded by one replay, and the
    oracle's verdict beside it), and what that replay left: a native backtrace, the literals."""
    from xlatools.replay.plan import ReplayRequest
    from xlatools.replay.repro import build_pack

    plan, request = outcome.plan, outcome.plan.request
    if not (folder / "inputs.npz").is_file():
        return Packed()
    replay = ReplayRequest(
        source=folder / "reduced.hlo.txt",
        python=plan.test.python,
        inputs=str(folder / "inputs.npz"),
        references=list(request.references),
        atol=request.atol,
        rtol=request.rtol,
        xla_flags=list(request.xla_flags),
        disable_passes=list(request.disable_passes),
        platform=request.platform,
        name="reduced",
        print_literals=True,
    )
    reporter.step("packing the reduced module (one replay records its expected outcome)")
    oracle = f"{plan.oracle.describe()} ({outcome.rechecks[-1].reason})"
    made = build_pack(replay, folder / "repro.tar.gz", folder / "replays", argv + ["(repro pack)"], reporter, oracle)
    modules = made.replayed.record.modules
    crash = next((run.native_backtrace for m in modules for run in m.runs if run.native_backtrace), None)
    test_dir = next((run.dir for m in modules for run in m.runs if run.label == "test" and run.dir), None)
    shown = not all(m.outcome == "ok" for m in modules)  # the oracle found it bad: an `ok` replay does not show that
    return Packed(
        made.path,
        ", ".join(str(m.outcome) for m in modules),
        Path(crash) if crash else None,
        Path(test_dir) / "literals.txt" if test_dir else None,
        shown,
    )


def reduce_record(prepared: PreparedReduce, argv: list[str]) -> ReduceManifest:
    """The manifest of a reduction that is starting (status "running")."""
    from xlatools.records.base import invoked
    from xlatools.replay.execute import target_versions

    plan = prepared.plan
    record = ReduceManifest(
        source=os.path.realpath(plan.request.source), plan=plan.record(), targets=target_versions(prepared.targets)
    )
    return invoked(record, argv)


def execute_reduce(
    prepared: PreparedReduce,
    out_root: Path,
    argv: list[str],
    reporter: Reporter,
    fresh: bool = False,
    caller_env: dict[str, str] | None = None,
) -> ReduceRun:
    """Reduce into a fresh bundle. Exit 1 when the result is flaky (not interesting on every re-check)."""
    from xlatools.bundle import bundle_session
    from xlatools.debug.crash import FILE
    from xlatools.fsutil import atomic_write_text

    with Reduction.start(prepared, out_root, reporter, fresh, caller_env) as reduction:
        with bundle_session(
            out_root, reduce_record(prepared, argv), name=prepared.plan.name, reporter=reporter
        ) as session:
            try:
                outcome = reduction.run()
            except (KeyboardInterrupt, Interrupted):  # the session records it; the state stays for a re-run
                raise Interrupted(
                    f"interrupted; the state is kept: run the same command again to continue "
                    f"(reduce record: {session.path})"
                ) from None
            record: ReduceManifest = session.record
            record.rounds, record.test, record.reference = outcome.rounds, outcome.test, outcome.reference
            record.result = write_results(outcome, session.path, argv, reporter)
            record.native_backtrace = FILE if (session.path / FILE).is_file() else None
            atomic_write_text(session.path / "summary.json", json.dumps(to_json(record.result), indent=2) + "\n")
            if outcome.flaky:
                session.finish(
                    Status.FAILED,
                    exit_code=EXIT_FAILED,
                    error="flaky: the reduced module was not interesting on every re-check",
                )
    return ReduceRun(session.record, session.record.exit_code or 0)
