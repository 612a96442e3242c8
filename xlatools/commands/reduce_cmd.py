"""`xlatools reduce`: shrink an HLO module to the smallest one that still shows the bug."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def reduce(
    source: Path = typer.Argument(..., help="A run bundle, a dump folder, HLO text/proto, a snapshot or a repro pack."),
    module: Optional[str] = typer.Option(None, "--module", "-m", help="Module id or name (when SOURCE holds several)."),
    python: Optional[str] = typer.Option(None, "--python", help="Target interpreter (default: this one)."),
    reference: List[str] = typer.Option([], "--reference", help="Oracle: outputs differ from the CPU backend's (cpu)."),
    reference_python: List[str] = typer.Option([], "--reference-python", help="Oracle: outputs differ from another interpreter's (another jaxlib)."),
    error: Optional[str] = typer.Option(None, "--error", help="Oracle: a compile/runtime error or crash whose message matches this regex."),
    script: Optional[str] = typer.Option(None, "--script", help="Oracle: a command run with the candidate's HLO file as last argument; 1-127 interesting, 0 not, 125 skip."),
    inputs: Optional[str] = typer.Option(None, "--inputs", help="random, zeros, ones or FILE.npz (default: the snapshot's arguments, else random)."),
    seed: int = typer.Option(0, "--seed", help="Seed of random inputs."),
    atol: float = typer.Option(1e-3, "--atol", help="Absolute tolerance of the numerical oracles."),
    rtol: float = typer.Option(1e-3, "--rtol", help="Relative tolerance of the numerical oracles."),
    xla_flag: List[str] = typer.Option([], "--xla-flag", help="An XLA flag for the test runs (repeatable)."),
    disable_pass: List[str] = typer.Option([], "--disable-pass", help="Keep this HLO pass disabled while reducing (repeatable)."),
    from_bisect: Optional[Path] = typer.Option(None, "--from-bisect", help="A `bisect passes` folder: ISSUE.md names its culprit pass."),
    platform: str = typer.Option("auto", "--platform", help="auto, cpu or gpu."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Candidates run side by side (each slot keeps its own target processes)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Stop one oracle run after this many seconds."),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="Stop reducing after this many seconds (the best so far is the result)."),
    rechecks: int = typer.Option(3, "--rechecks", help="Re-run the oracle on the result this many times (flaky: exit 1)."),
    strategy: str = typer.Option("full", "--strategy", help="full, or ddmin alone (for comparison)."),
    fresh: bool = typer.Option(False, "--fresh", help="Forget the saved state of this reduction and start over."),
    out: Path = typer.Option(Path("artifacts"), "--out", help="Bundle root directory (the state lives in OUT/.reduce-state)."),
    name: Optional[str] = typer.Option(None, "--name", help="Bundle name (default: reduce-<module>)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable result on stdout."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and run nothing."),
) -> None:
    """Reduce an HLO module to a minimal one that is still interesting; write reduced.hlo.txt, inputs, a repro pack and ISSUE.md.

    Exit: 0 reduced, 1 the result is flaky, 2 bad input (also: the input is not interesting),
    3 environment missing, 130 interrupted (run the same command again to continue)."""
    import json
    import sys

    from xlatools.reduce.execute import prepare
    from xlatools.reduce.plan import ReduceRequest
    from xlatools.run.target import resolve_python

    request = ReduceRequest(
        source=source.expanduser().absolute(), python=resolve_python(python), module=module, references=list(reference),
        reference_pythons=[resolve_python(p) for p in reference_python], error=error, script=script, inputs=inputs,
        seed=seed, atol=atol, rtol=rtol, xla_flags=list(xla_flag), disable_passes=list(disable_pass), platform=platform,
        jobs=jobs, timeout=timeout, max_time=max_time, rechecks=rechecks, strategy=strategy,
        culprit_pass=_culprit(from_bisect) if from_bisect else None, name=name,
    )
    prepared = prepare(request)
    if dry_run:
        plan = prepared.plan.to_json()
        typer.echo(json.dumps(plan, indent=2) if as_json else _plan_text(plan))
        return
    from xlatools.reduce.output import execute_reduce

    def progress(line: str) -> None:
        if not quiet:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    manifest, code = execute_reduce(prepared, out, sys.argv[1:], progress, fresh)
    result = manifest["result"]
    if as_json:
        typer.echo(json.dumps({"status": manifest["status"], "exit_code": code, "bundle": manifest["bundle"], **result},
                              indent=2))
    else:
        progress(f"\n{result['instructions_before']} -> {result['instructions_after']} instructions, "
                 f"{result['oracle_calls']} oracle calls, {result['seconds']:.1f} s"
                 + (f" (stopped: {result['stopped']})" if result["stopped"] else ""))
        progress(f"result: {result['verdict']}" + ("  FLAKY: not interesting on every re-check" if result["flaky"] else ""))
        progress(f"bundle: {manifest['bundle']}  (ISSUE.md, reduced.hlo.txt, inputs.npz, repro.tar.gz)")
    raise typer.Exit(code)


def _culprit(folder: Path) -> str:
    from xlatools.bisect.state import load
    from xlatools.errors import UsageError

    state = load(folder.expanduser())
    if state is None or state.kind != "passes":
        raise UsageError(f"--from-bisect {folder}: not a `bisect passes` folder (no bisect.json of kind passes)")
    passes = [p["name"] for p in (state.result or {}).get("passes", [])]
    if state.status != "done" or not passes:
        raise UsageError(f"--from-bisect {folder}: that bisection named no culprit pass (status {state.status})",
                         hint="finish it first: run the same `xlatools bisect passes` command again")
    return ", ".join(passes)


def _plan_text(plan: dict) -> str:
    request = plan["request"]
    lines = [f"source:    {request['source']}", f"module:    {plan['module']['name']}  {plan['module']['files']}",
             f"oracle:    {plan['oracle']['describe']}",
             f"test:      {plan['test']['python']} platform={plan['test']['platform']} "
             f"XLA_FLAGS={' '.join(plan['test']['xla_flags']) or '-'}"]
    if plan["reference"]:
        lines.append(f"reference: {plan['reference']['python']} platform={plan['reference']['platform']}")
    lines.append(f"strategy:  {request['strategy']}, --jobs {request['jobs']}, {request['rechecks']} re-checks")
    return "\n".join(lines)
