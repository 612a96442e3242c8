"""`xlatools replay` and `xlatools repro pack|run`: replay dumped HLO modules, portable reproducers."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(help="Portable repro packs: pack a bundle's modules, replay a pack anywhere.", no_args_is_help=True)


def replay(
    source: Path = typer.Argument(..., help="A run bundle, an XLA dump folder, or one file: HLO text, .hlo.pb, *.snapshot.*.pb, .mlir."),
    module: List[str] = typer.Option([], "--module", "-m", help="Module id or name of a bundle/dump (repeatable; default: the program's own modules)."),
    include_all: bool = typer.Option(False, "--all", help="Also replay jax's helper modules (jit_iota, jit_convert_element_type, ...)."),
    source_from: str = typer.Option("auto", "--from", help="auto, text, proto, snapshot or mlir: which dumped form of a module to compile."),
    python: Optional[str] = typer.Option(None, "--python", help="Target interpreter (default: this one)."),
    inputs: Optional[str] = typer.Option(None, "--inputs", help="random, zeros, ones or FILE.npz (default: the snapshot's arguments, else random)."),
    seed: int = typer.Option(0, "--seed", help="Seed of random inputs."),
    reference: List[str] = typer.Option([], "--reference", help="Compare with another backend: cpu (repeatable)."),
    reference_python: List[str] = typer.Option([], "--reference-python", help="Compare with the same module on another interpreter (repeatable)."),
    reference_xla_flag: List[str] = typer.Option([], "--reference-xla-flag", help="An XLA flag for the reference runs only (repeatable)."),
    atol: float = typer.Option(1e-3, "--atol", help="Absolute tolerance for floating-point outputs."),
    rtol: float = typer.Option(1e-3, "--rtol", help="Relative tolerance for floating-point outputs."),
    iterations: int = typer.Option(1, "--iterations", "-n", help="Run the compiled module N times (timings: min/median)."),
    xla_flag: List[str] = typer.Option([], "--xla-flag", help="An XLA flag for the test run (repeatable; checked against the jaxlib)."),
    disable_pass: List[str] = typer.Option([], "--disable-pass", help="Disable an HLO pass by name (repeatable; --xla_disable_hlo_passes)."),
    no_opt: bool = typer.Option(False, "--no-opt", help="Backend optimisation level 0 (--xla_backend_optimization_level=0)."),
    platform: str = typer.Option("auto", "--platform", help="auto, cpu or gpu."),
    dump: List[str] = typer.Option([], "--dump", help="A dump preset for the replay itself, e.g. hlo or passes (repeatable)."),
    print_literals: bool = typer.Option(False, "--print-literals", help="Print inputs and outputs (long arrays abbreviated)."),
    out: Path = typer.Option(Path("artifacts"), "--out", help="Bundle root directory."),
    name: Optional[str] = typer.Option(None, "--name", help="Bundle name (default: replay-<module or source>)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Stop one target process after this many seconds (exit 124)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable result on stdout."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and run nothing."),
) -> None:
    """Compile and run dumped HLO modules in a target interpreter; compare with the snapshot and references.

    Exit: 0 all match, 1 a mismatch or a failure (compile-error, runtime-error, crash), 2 bad input,
    3 environment missing, 124 a target timed out, 130 interrupted."""
    import json
    import sys

    from xlatools.replay.execute import execute_replay, prepare
    from xlatools.replay.plan import ReplayRequest
    from xlatools.run.target import resolve_python

    request = ReplayRequest(
        source=source.expanduser().absolute(), python=resolve_python(python), modules=list(module), include_all=include_all,
        source_from=source_from, inputs=inputs, seed=seed, references=list(reference),
        reference_pythons=[resolve_python(p) for p in reference_python], reference_xla_flags=list(reference_xla_flag),
        atol=atol, rtol=rtol, iterations=iterations, xla_flags=list(xla_flag), disable_passes=list(disable_pass),
        no_opt=no_opt, platform=platform, dump=list(dump), print_literals=print_literals, timeout=timeout, name=name,
    )
    prepared = prepare(request)
    if dry_run:
        typer.echo(json.dumps(prepared.plan.to_json(), indent=2) if as_json else _plan_text(prepared.plan))
        return
    manifest, code, table = execute_replay(prepared, out, sys.argv[1:])
    from xlatools.console import append_job_summary

    append_job_summary(f"### xlatools replay\n\n- {len(manifest.get('modules') or [])} module(s): {manifest['status']} "
                       f"(exit {manifest['exit_code']})\n- bundle: `{manifest['bundle']}`\n")
    if as_json:
        keep = ("status", "exit_code", "bundle", "modules")
        typer.echo(json.dumps({k: manifest.get(k) for k in keep}, indent=2))
    else:
        _print_result(manifest, table, print_literals)
    raise typer.Exit(code)


def _plan_text(plan) -> str:
    lines = [f"source:  {plan.request.source} ({plan.source_kind})"]
    lines += [f"module:  {m.label}  " + ", ".join(f"{k}={v}" for k, v in m.files().items()) for m in plan.modules]
    for run in plan.runs:
        lines.append(f"run:     {run.label}: {run.python} platform={run.platform} XLA_FLAGS={' '.join(run.xla_flags) or '-'}")
    lines += [f"note:    {n}" for n in plan.notes]
    return "\n".join(lines)


def _print_result(manifest: dict, table: str, print_literals: bool) -> None:
    from xlatools.replay.execute import say

    say("")
    say(table)
    for module in manifest["modules"]:
        for run in module["runs"]:
            if run["failure"]:
                say(f"\n{module['name']} ({run['label']}): {run['failure']}: {run['message']}")
                for line in run["log_tail"][-8:]:
                    say(f"  | {line}")
            if print_literals and run.get("dir") and Path(run["dir"], "literals.txt").is_file():
                say(f"\n{module['name']} ({run['label']}) literals:\n" + Path(run["dir"], "literals.txt").read_text())
    say(f"\n{manifest['status']} (exit {manifest['exit_code']})  bundle: {manifest['bundle']}")
    say(f"HTML report: xlatools report {manifest['bundle']} -o report.html")


@app.command("pack")
def pack(
    bundle: Path = typer.Argument(..., help="A run bundle (or an XLA dump folder)."),
    output: Path = typer.Option(Path("repro.tar.gz"), "--output", "-o", help="The pack to write."),
    module: List[str] = typer.Option([], "--module", "-m", help="Module id or name (repeatable; default: the program's own modules)."),
    include_all: bool = typer.Option(False, "--all", help="Also jax's helper modules."),
    source_from: str = typer.Option("auto", "--from", help="auto, text, proto, snapshot or mlir."),
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter that records the expected outcome (default: the run's, else this one)."),
    inputs: Optional[str] = typer.Option(None, "--inputs", help="random, zeros or ones (default: the snapshot's arguments, else random)."),
    seed: int = typer.Option(0, "--seed", help="Seed of random inputs."),
    reference: List[str] = typer.Option([], "--reference", help="cpu: also compare with the CPU backend."),
    reference_python: List[str] = typer.Option([], "--reference-python", help="Also compare with the same module on another interpreter (another jaxlib); `repro run` needs one of that jaxlib too (repeatable)."),
    atol: float = typer.Option(1e-3, "--atol"),
    rtol: float = typer.Option(1e-3, "--rtol"),
    xla_flag: List[str] = typer.Option([], "--xla-flag", help="An XLA flag the replay uses (repeatable)."),
    disable_pass: List[str] = typer.Option([], "--disable-pass", help="Disable an HLO pass by name (repeatable)."),
    no_opt: bool = typer.Option(False, "--no-opt", help="Backend optimisation level 0."),
    platform: str = typer.Option("auto", "--platform", help="auto, cpu or gpu."),
    out: Path = typer.Option(Path("artifacts"), "--out", help="Root of the replay bundle that records the expected outcome."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable result on stdout."),
) -> None:
    """Write a deterministic, self-contained repro pack (modules, snapshot, program, flags, versions, expected outcome)."""
    import json
    import sys

    from xlatools.replay.plan import ReplayRequest
    from xlatools.replay.repro import build_pack
    from xlatools.run.target import resolve_python

    request = ReplayRequest(
        source=bundle.expanduser().absolute(), python=resolve_python(python or _run_python(bundle)), modules=list(module),
        include_all=include_all, source_from=source_from, inputs=inputs, seed=seed, references=list(reference),
        reference_pythons=[resolve_python(p) for p in reference_python],
        atol=atol, rtol=rtol, xla_flags=list(xla_flag), disable_passes=list(disable_pass), no_opt=no_opt,
        platform=platform, name=f"pack-{bundle.name}",
    )
    path, manifest, table = build_pack(request, output, out, sys.argv[1:])
    # Keyed by id and name: one program may compile several modules of one name.
    outcomes = {_label(m): m["outcome"] + (f" ({m['failed_run']})" if m.get("failed_run") not in (None, "test") else "")
                for m in manifest["modules"]}
    left_out = {_label(m): m["why"] for m in manifest["left_out"]}
    if as_json:
        typer.echo(json.dumps({"pack": str(path), "replay_bundle": manifest["bundle"], "expected": outcomes,
                               "left_out": left_out}, indent=2))
    else:
        from xlatools.replay.execute import say

        say(table)
        for label, why in left_out.items():
            say(f"left out of the pack: {label}: {why}")
        say(f"\npack: {path}  (expected: {', '.join(f'{k} {v}' for k, v in outcomes.items())})")


def _label(module: dict) -> str:
    return module["name"] if module.get("id") is None else f"{module['id']:04d} {module['name']}"


def _run_python(bundle: Path) -> Optional[str]:
    """The interpreter a run bundle was made with, when it still exists here."""
    import json
    import os

    try:
        python = json.loads((bundle / "manifest.json").read_text())["interpreter"]["python"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return python if python and os.path.exists(python) else None


@app.command("run")
def run(
    pack_file: Path = typer.Argument(..., help="A repro pack (.tar.gz from `xlatools repro pack`)."),
    python: Optional[str] = typer.Option(None, "--python", help="Target interpreter (default: this one)."),
    match: str = typer.Option("class", "--match", help="What must equal the expected outcome: class (outcome per module), outputs (+ output digests) or fingerprint (+ optimised HLO)."),
    same_jaxlib: bool = typer.Option(False, "--same-jaxlib", help="Cannot run (exit 3) unless the target has the pack's jaxlib version."),
    reference_python: List[str] = typer.Option([], "--reference-python", help="The reference interpreter(s) of a pack made with --reference-python (default: the paths it names, where they exist)."),
    out: Path = typer.Option(Path("artifacts"), "--out", help="Bundle root directory."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable result on stdout."),
) -> None:
    """Replay a repro pack here. Exit: 1 reproduced, 0 not reproduced, 3 cannot run here, 2 a bad or unsafe pack."""
    import json
    import sys

    from xlatools.replay.repro import run_pack

    result = run_pack(pack_file, python, out, match, sys.argv[1:], same_jaxlib, list(reference_python))  # type: ignore[arg-type]
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        from xlatools.replay.execute import say

        say(f"\n{result.outcome}: {result.reason}")
        for line in result.differences:
            say(f"  differs: {line}")
        if result.bundle:
            say(f"bundle: {result.bundle}")
    raise typer.Exit(result.exit_code)
