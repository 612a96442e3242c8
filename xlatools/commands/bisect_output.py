"""What `xlatools bisect ...` prints: a dry run's plan, and the state and summary at the end."""

from __future__ import annotations

from pathlib import Path

import typer


def print_plan(plan, as_json: bool, cluster=None) -> None:
    import json

    from xlatools.records import to_json

    if as_json:
        typer.echo(json.dumps(to_json(plan), indent=2))
        return
    for row in plan.candidates:
        extra = (
            f"  {' '.join(row.requirements)}{'  (cached)' if row.cached else ''}"
            if row.requirements is not None
            else ""
        )
        typer.echo(f"{row.label}{extra}")
    for version in plan.excluded:
        typer.echo(f"(jax {version}: no jaxlib of that version for this Python; not a candidate)")
    test = getattr(plan.test, "program", None) or getattr(plan.test, "pack", None)
    typer.echo(f"{len(plan.candidates)} candidates; at most {plan.ideal_steps} steps without skips; test: {test}")
    if cluster is not None:
        from xlatools.cluster.plan import JOB_FOLDER, plan_job

        job = plan_job(
            cluster, "stepNN-<candidate>", f"<step bundle>/{JOB_FOLDER}", 1, "<step python>", str(Path.cwd())
        )
        typer.echo(f"each step a Slurm job ({cluster.describe()}; from {cluster.source}):")
        typer.echo("\n".join(job.lines()))


def finish(state, as_json: bool) -> None:
    import json

    from xlatools.bisect.driver import render, summary
    from xlatools.console import append_job_summary
    from xlatools.errors import EXIT_FAILED, EXIT_OK
    from xlatools.records import to_json

    text = render(state)
    append_job_summary(f"### xlatools bisect\n\n```\n{text.rstrip()}\n```\n")
    if as_json:
        typer.echo(
            json.dumps({**to_json(state), "folder": str(state.folder), "summary": to_json(summary(state))}, indent=2)
        )
    else:
        typer.echo(text)
    # An answer whose boundary steps disagreed under --confirm is not one to act on.
    raise typer.Exit(EXIT_FAILED if state.result is not None and state.result.flaky else EXIT_OK)


def print_pass_plan(plan, as_json: bool) -> None:
    import json

    from xlatools.records import to_json

    if as_json:
        typer.echo(json.dumps(to_json(plan), indent=2))
        return
    recorded = f"{plan.recorded_steps} steps recorded, status {plan.status}" if plan.status else "nothing recorded"
    typer.echo(f"bisect folder: {plan.folder} ({recorded})")
    if plan.test_changed:
        typer.echo(f"the test changed since it was recorded ({'; '.join(plan.test_changed)}): a fresh bisection")
    if plan.candidates is None:
        typer.echo("candidates: the passes that change the module in the baseline's per-pass dump (not run yet)")
    else:
        typer.echo(f"candidates ({len(plan.candidates)}, from the recorded baseline): {', '.join(plan.candidates)}")
    when = " when a candidate" if plan.candidates is None else ""
    for note in plan.left_enabled:
        typer.echo(f"left enabled{when}: {note.name} ({note.why})")
    if plan.include:
        typer.echo(f"candidates by --include-pass: {', '.join(plan.include)}")
    if plan.pool is not None:
        typer.echo(f"disabled in the search ({len(plan.pool)}): {', '.join(plan.pool) or 'none'}")
    typer.echo("plan:")
    for n, step in enumerate(plan.steps, 1):
        typer.echo(f"  {n}. {step}")
    typer.echo(f"test: {getattr(plan.test, 'program', None)} (backend table: {plan.backend})")
