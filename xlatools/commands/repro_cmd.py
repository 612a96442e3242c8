"""`xlatools repro pack|run`: portable reproducers (a bundle's modules, flags, versions and expected outcome)."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from xlatools.commands.options import (
    OldModuleFlag,
    InputsOption,
    JsonOption,
    NondeterministicOption,
    OutOption,
    PackMatchOption,
    PlatformOption,
    PrecisionOption,
    PythonOption,
    SeedOption,
    SourceFormOption,
    XlaFlagOption,
    followed_run,
    invocation,
)
from xlatools.vocab import PackMatch, Platform, PrecisionMode, SourceForm

app = typer.Typer(help="Portable repro packs: pack a bundle's modules, replay a pack anywhere.", no_args_is_help=True)


# `repro pack`'s options that set what a replay bundle's pack would otherwise carry: parameter -> request field.
CARRIED_OPTIONS = {
    "python": "python",
    "module": "modules",
    "include_all": "include_all",
    "source_from": "source_from",
    "inputs": "inputs",
    "seed": "seed",
    "reference": "references",
    "reference_python": "reference_pythons",
    "atol": "atol",
    "rtol": "rtol",
    "xla_flag": "xla_flags",
    "disable_pass": "disable_passes",
    "no_opt": "no_opt",
    "platform": "platform",
    "nondeterministic": "deterministic",
    "precision": "precision",
}


@app.command("pack")
def pack(
    ctx: typer.Context,
    bundle: Path = typer.Argument(
        ..., help="A run bundle (or an XLA dump folder), or a replay bundle: its replay, made portable."
    ),
    output: Path = typer.Option(Path("repro.tar.gz"), "--output", "-o", help="The pack to write."),
    module: List[str] = typer.Option(
        [], "--module", help="Module id or name (repeatable; default: the program's own modules)."
    ),
    old_m: OldModuleFlag = None,
    include_all: bool = typer.Option(False, "--all", help="Also jax's helper modules."),
    source_from: SourceFormOption = SourceForm.AUTO,
    python: PythonOption = None,
    inputs: InputsOption = None,
    seed: SeedOption = 0,
    reference: List[str] = typer.Option([], "--reference", help="cpu: also compare with the CPU backend."),
    reference_python: List[str] = typer.Option(
        [],
        "--reference-python",
        help="Also compare with the same module on another interpreter (another jaxlib); `repro run` needs one of that jaxlib too (repeatable).",
    ),
    atol: float = typer.Option(1e-3, "--atol"),
    rtol: float = typer.Option(1e-3, "--rtol"),
    xla_flag: XlaFlagOption = [],
    disable_pass: List[str] = typer.Option([], "--disable-pass", help="Disable an HLO pass by name (repeatable)."),
    no_opt: bool = typer.Option(False, "--no-opt", help="Backend optimisation level 0."),
    nondeterministic: NondeterministicOption = False,
    platform: PlatformOption = Platform.AUTO,
    precision: PrecisionOption = PrecisionMode.AUTO,
    out: OutOption = Path("artifacts"),
    as_json: JsonOption = False,
) -> None:
    """Write a deterministic, self-contained repro pack (modules, snapshot, program, flags, versions, expected outcome).

    The expected outcome is recorded by a replay into a bundle under --out, in --python (default:
    the run's interpreter when it still exists here, else this one). Of a replay bundle, the pack carries
    that replay: its modules, interpreter, flags, tolerances, inputs and references (options given here win)."""
    import os

    from xlatools.console import Reporter
    from xlatools.replay.pack_replay import replay_of
    from xlatools.replay.plan import ReplayRequest
    from xlatools.replay.repro import build_pack, run_of
    from xlatools.run.target import resolve_python

    replayed = replay_of(bundle)
    bundle = followed_run(bundle) if replayed is None else bundle
    if python is None and replayed is None:
        run = run_of(bundle)
        recorded = run.interpreter.python if run else None
        python = recorded if recorded and os.path.exists(recorded) else None
    request = ReplayRequest(
        source=bundle.expanduser().absolute(),
        python=resolve_python(python),
        modules=list(module),
        include_all=include_all,
        source_from=source_from,
        inputs=inputs,
        seed=seed,
        references=list(reference),
        reference_pythons=[resolve_python(p) for p in reference_python],
        atol=atol,
        rtol=rtol,
        xla_flags=list(xla_flag),
        disable_passes=list(disable_pass),
        no_opt=no_opt,
        platform=platform or Platform.AUTO,
        name=f"pack-{Path(os.path.realpath(bundle)).name}",
        deterministic=False if nondeterministic else None,
        precision=precision,
    )
    reporter = Reporter()
    changes: list[str] = []
    if replayed is not None:
        from xlatools.replay.pack_replay import carry_replay, outcome_changes

        given = {f for name, f in CARRIED_OPTIONS.items() if _on_command_line(ctx, name)}
        request, notes = carry_replay(replayed, bundle, request, given)
        for note in notes:
            reporter.info(f"note: {note}")
        made = build_pack(request, output, out, invocation().argv, reporter)
        changes = outcome_changes(replayed, made.index.modules)
    else:
        made = build_pack(request, output, out, invocation().argv, reporter)
    _print_pack(made, as_json, reporter, changes)


@app.command("run")
def run(
    pack_file: Path = typer.Argument(..., help="A repro pack (.tar.gz from `xlatools repro pack`)."),
    python: PythonOption = None,
    match: PackMatchOption = PackMatch.CLASS,
    same_jaxlib: bool = typer.Option(
        False, "--same-jaxlib", help="Cannot run (exit 3) unless the target has the pack's jaxlib version."
    ),
    reference_python: List[str] = typer.Option(
        [],
        "--reference-python",
        help="The reference interpreter(s) of a pack made with --reference-python (default: the paths it names, where they exist).",
    ),
    out: OutOption = Path("artifacts"),
    as_json: JsonOption = False,
    nondeterministic: NondeterministicOption = False,
) -> None:
    """Replay a repro pack here. Exit: 1 reproduced, 0 not reproduced, 3 cannot run here, 2 a bad or unsafe pack,
    5 nothing to reproduce (the pack records no failure: every module ran ok when it was made)."""
    import json

    from xlatools.console import Reporter
    from xlatools.records import to_json
    from xlatools.replay.repro import run_pack

    reporter = Reporter()
    result = run_pack(
        pack_file,
        python,
        out,
        match,
        invocation().argv,
        same_jaxlib,
        reporter,
        list(reference_python),
        nondeterministic,
    )
    if as_json:
        typer.echo(json.dumps({**to_json(result), "exit_code": result.exit_code}, indent=2))
    else:
        reporter.result(f"\n{result.outcome}: {result.reason}")
        for line in result.differences:
            reporter.info(f"  differs: {line}")
        if result.bundle:
            reporter.info(f"bundle: {result.bundle}")
    raise typer.Exit(result.exit_code)


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    """Was option `name` given on the command line (not its default)? By the source's name: typer ships its own
    copy of click's ParameterSource."""
    source = ctx.get_parameter_source(name)
    return getattr(source, "name", None) == "COMMANDLINE"


def _print_pack(made, as_json: bool, reporter, changes: list[str]) -> None:
    """The pack written: its path and each module's expected outcome (and what was left out)."""
    import json

    from xlatools.replay.repro import reference_names
    from xlatools.replay.repro_verdict import describe, nothing_to_reproduce

    # Keyed by id and name: one program may compile several modules of one name. Each outcome says what it was
    # judged against (`mismatch against reference-python-1 (jaxlib 0.6.1)`): `repro run` reproduces it only so.
    names = reference_names(made.index)
    outcomes = {m.label: describe(m, names) for m in made.index.modules}
    left_out = {m.label: m.why for m in made.index.left_out}
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "pack": str(made.path),
                    "replay_bundle": made.replayed.record.bundle,
                    "expected": outcomes,
                    "left_out": left_out,
                    "not_as_replayed": changes,
                },
                indent=2,
            )
        )
    else:
        reporter.info(made.replayed.table)
        for label, why in left_out.items():
            reporter.warn(f"left out of the pack: {label}: {why}")
        for change in changes:
            reporter.warn(f"not as replayed: {change}")
        if nothing_to_reproduce(made.index.modules):
            referenced = made.index.reference_pythons or made.index.replay.references
            reporter.warn(
                "every module ran ok: this pack records no failure, so `repro run` will answer "
                "nothing-to-reproduce (exit 5)"
                + (
                    " (its modules match the reference(s) it compares with)"
                    if referenced
                    else "; to make a pack that can answer, pack again with --reference-python PY (a jaxlib that "
                    "computes it right) or --reference cpu (a GPU run against the CPU)"
                )
            )
        reporter.result(f"\npack: {made.path}  (expected: {', '.join(f'{k} {v}' for k, v in outcomes.items())})")
