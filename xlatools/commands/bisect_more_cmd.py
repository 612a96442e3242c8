"""`xlatools bisect timeline` (every release measured) and `xlatools bisect flags` (which switch recovers), registered
on the bisect group by commands/bisect_cmd.py."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.bisect_options import (
    CLUSTER_PROFILE,
    FRESH,
    GOOD_PYTHON,
    OUT,
    REQUIREMENTS,
    WITH,
    program_requirements,
    with_test_options,
)
from xlatools.commands.options import DryRunOption, JsonOption, PythonOption


@with_test_options
def timeline(
    first: str = typer.Option(..., "--from", help="The first jax release to measure."),
    last: str = typer.Option(..., "--to", help="The last jax release to measure."),
    python_version: str = typer.Option("3.11", "--python-version", help="Python of the release environments."),
    jobs: int = typer.Option(
        1,
        "--jobs",
        "-j",
        min=1,
        max=64,
        help="Measure K releases at once (disturbs timings on one machine; fine on Slurm).",
    ),
    profile: Optional[str] = CLUSTER_PROFILE,
    with_: List[str] = WITH,
    requirements: List[Path] = REQUIREMENTS,
    test=None,
    reporter=None,
    out: Path = OUT,
    fresh: bool = FRESH,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Measure a metric on every jax release from --from to --to: a table, every step up and down, a picture.

    --metric NAME (no --threshold) and a program after --, as for bisect releases. Each release runs
    --repeat times (default 3; an exact metric stops at 3), in rounds that alternate the order, and is
    recorded as it finishes: the same command continues. Writes timeline.svg and timeline.html in the
    folder. --json: the state with its timeline (with --dry-run: the releases and the test)."""
    from xlatools.bisect.timeline import TimelineRequest, plan_timeline, run_timeline

    request = TimelineRequest(
        first=first,
        last=last,
        test=test,
        python_version=python_version,
        out=out,
        fresh=fresh,
        jobs=jobs,
        requirements=program_requirements(with_, requirements),
    )
    if dry_run:
        from xlatools.commands.bisect_output import print_plan

        return print_plan(plan_timeline(request, reporter), as_json, test.cluster)
    state = run_timeline(request, reporter)
    _finish_timeline(state, as_json)


def _finish_timeline(state, as_json: bool) -> None:
    import json

    from xlatools.bisect.timeline_view import table_lines
    from xlatools.console import append_job_summary
    from xlatools.records import to_json

    result = state.timeline
    lines = [f"bisect timeline: {state.status}", f"folder: {state.folder}", *table_lines(result)]
    lines.append(f"picture: {result.svg}  (with the table: {result.html})")
    text = "\n".join(lines)
    append_job_summary(f"### xlatools bisect timeline\n\n```\n{text}\n```\n")
    if as_json:
        typer.echo(json.dumps({**to_json(state), "folder": str(state.folder)}, indent=2))
    else:
        typer.echo(text)


@with_test_options
def flags(
    python: PythonOption = None,
    good_python: Optional[str] = GOOD_PYTHON,
    switch: List[str] = typer.Option([], "--switch", help="Try only this switch (repeatable; names: docs/bisect.md)."),
    profile: Optional[str] = CLUSTER_PROFILE,
    test=None,
    reporter=None,
    out: Path = OUT,
    fresh: bool = FRESH,
    as_json: JsonOption = False,
) -> None:
    """Try each documented backend switch (XLA:CPU thunk runtime, fusion emitters, YNN fusions, XNNPACK, oneDNN; GPU:
    Triton GEMMs, command buffers, cuDNN fusions) and name the ones that turn the bad program good.

    The test is any test bisect takes (exit status, --match, --metric). Only the switches for this backend
    and jaxlib version that its own flag list accepts are tried. Exit 0 when a switch recovers, 1 when
    none does, 2 bad input (also: the program is good as it is). --json: the state with its flags table."""
    from xlatools.bisect.flags import FlagsRequest, run_flags

    request = FlagsRequest(
        test=test, python=python, good_python=good_python, switches=tuple(switch), out=out, fresh=fresh
    )
    state = run_flags(request, reporter)
    _finish_flags(state, as_json)


def _finish_flags(state, as_json: bool) -> None:
    import json

    from xlatools.bisect.flags import table_lines
    from xlatools.console import append_job_summary
    from xlatools.errors import EXIT_FAILED, EXIT_OK
    from xlatools.records import to_json

    text = "\n".join([f"bisect flags: {state.status}", f"folder: {state.folder}", *table_lines(state)])
    append_job_summary(f"### xlatools bisect flags\n\n```\n{text}\n```\n")
    typer.echo(json.dumps({**to_json(state), "folder": str(state.folder)}, indent=2) if as_json else text)
    raise typer.Exit(EXIT_OK if state.flags and state.flags.recovers else EXIT_FAILED)
