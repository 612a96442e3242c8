"""`xlatools triage`: from a program that a jax release broke to an upstream-ready ISSUE.md, in one command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List

import typer

from xlatools.commands.bisect_options import REQUIREMENTS, WITH, program_requirements, with_test_options
from xlatools.commands.options import AtolOption, DryRunOption, EnumChoice, JsonOption, RtolOption, invocation
from xlatools.vocab import TriageStage

SkipOption = Annotated[
    List[TriageStage],
    typer.Option(
        "--skip",
        click_type=EnumChoice(TriageStage),
        help="Leave this stage alone this time (repeatable; what it found before still counts): "
        + ", ".join(stage.value for stage in TriageStage)
        + ".",
    ),
]


@with_test_options
def triage(
    good: str = typer.Option(..., "--good", help="A jax release where the program is right (exit 0)."),
    bad: str = typer.Option(..., "--bad", help="A later jax release where it is wrong (non-zero exit)."),
    python_version: str = typer.Option("3.11", "--python-version", help="Python of the release environments."),
    skip: SkipOption = [],
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Candidates the reduction runs side by side."),
    atol: AtolOption = 1e-3,
    rtol: RtolOption = 1e-3,
    out: Path = typer.Option(
        Path("artifacts/triage"),
        "--out",
        help="Root of triage folders (one per triage, found again when the same command runs again).",
    ),
    fresh: bool = typer.Option(
        False, "--fresh", help="Start over: move the recorded triage aside (kept as <folder>.<time>)."
    ),
    with_: List[str] = WITH,
    requirements: List[Path] = REQUIREMENTS,
    test=None,
    reporter=None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Triage a regression between two jax releases: bisect the releases, dump both sides, diff them, bisect the passes,
    reduce the module that differs, isolate its instructions and write ISSUE.md linking every finding.

    The program (after --) is the test, as for `xlatools bisect`: exit 0 good, else bad (--bad-exit,
    --match ...). Each stage is resumable (the same command continues) and skippable (--skip STAGE);
    one that cannot run says why and the others still report. Exit: 0 every stage done or skipped,
    else the exit code of the first stage that is not (3 when it was blocked), 2 bad input, 130 interrupted.

    With --metric NAME (a slowdown or a growth): the release bisection with the metric, the timeline of the
    releases it measured, the switch that recovers, the module that grew most, and ISSUE.md (docs/triage.md)."""
    from xlatools.triage.plan import TriageRequest

    request = TriageRequest(
        good=good,
        bad=bad,
        test=test,
        python_version=python_version,
        out=out,
        skip=frozenset(skip),
        atol=atol,
        rtol=rtol,
        jobs=jobs,
        fresh=fresh,
        requirements=program_requirements(with_, requirements),
    )
    if dry_run and request.test.rule.metric is not None:
        return _print_perf_plan(request, reporter, as_json)
    if dry_run:
        return _print_plan(request, reporter, as_json)
    from xlatools.console import append_job_summary
    from xlatools.triage.execute import triage as run_triage

    state = run_triage(request, invocation().argv, reporter)
    lines = [f"{record.stage}: {record.status}: {record.reason}" for record in state.stages]
    append_job_summary("### xlatools triage\n\n" + "\n".join(f"- {line}" for line in lines) + "\n")
    if as_json:
        import json

        from xlatools.records import to_json

        typer.echo(json.dumps({**to_json(state), "folder": str(state.folder)}, indent=2))
    else:
        typer.echo("\n".join(lines))
        typer.echo(f"\nISSUE.md: {state.issue}  (exit {state.exit_code})")
    raise typer.Exit(state.exit_code or 0)


def _print_plan(request, reporter, as_json: bool) -> None:
    import json

    from xlatools.triage.execute import plan_triage
    from xlatools.triage.stages import work

    state, plan = plan_triage(request, reporter)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "folder": str(state.folder),
                    "stages": [
                        {
                            "stage": p.stage.value,
                            "action": p.action.value,
                            "reason": p.reason,
                            "work": work(p.stage, request.good, request.bad),
                        }
                        for p in plan
                    ],
                },
                indent=2,
            )
        )
        return
    typer.echo(f"folder: {state.folder}")
    for number, planned in enumerate(plan, 1):
        typer.echo(
            f"{number}. {planned.stage}: {planned.action}"
            + (f" ({planned.reason})" if planned.reason else "")
            + f": {work(planned.stage, request.good, request.bad)}"
        )


def _print_perf_plan(request, reporter, as_json: bool) -> None:
    """--dry-run of triage --metric: its own stages (triage/perf.py)."""
    import json

    from xlatools.triage.perf import plan_perf

    folder, rows = plan_perf(request, reporter)
    if as_json:
        typer.echo(json.dumps({"folder": str(folder), "stages": rows}, indent=2))
        return
    typer.echo(f"folder: {folder}")
    for number, row in enumerate(rows, 1):
        typer.echo(
            f"{number}. {row['stage']}: {row['action']}"
            + (f" ({row['reason']})" if row["reason"] else "")
            + f": {row['work']}"
        )
