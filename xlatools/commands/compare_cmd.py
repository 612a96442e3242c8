"""`xlatools diff` and `xlatools report`: compare two bundles; render one or two as an HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.options import JsonOption, OldModuleFlag, ProcessOption


def diff(
    a: Path = typer.Argument(
        ..., help="Bundle A (run, replay or bisect step; or artifacts/latest), or an XLA dump folder."
    ),
    b: Path = typer.Argument(..., help="Bundle B, or an XLA dump folder."),
    module: List[str] = typer.Option(
        [], "--module", help="Only these modules (name or id; repeatable); shows their aligned passes and diffs."
    ),
    old_m: OldModuleFlag = None,
    as_json: JsonOption = False,
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the HTML report of A and B to this file."),
    full: bool = typer.Option(False, "--full", help="Unbounded text diffs (default: the first 200 lines of each)."),
    process: ProcessOption = None,
) -> None:
    """Compare two runs: run level (versions, flags, env), modules (matched by name + input fingerprint), passes."""
    import json

    from xlatools import console
    from xlatools.compare.diff import diff_bundles
    from xlatools.compare.text import markdown_summary, render_text

    result = diff_bundles(a, b, modules=list(module), full=full, process=process)
    if html is not None:
        from xlatools.compare.report import write_report

        write_report([a, b], html, diff=result, process=process, option="--html")
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2, default=str))
    else:
        typer.echo(render_text(result, detail=bool(module)))
    if html is not None:
        console.info(f"report: {html}")
    elif not as_json:
        console.info(f"report: xlatools report {a} {b} -o report.html")
    console.append_job_summary(markdown_summary(result, str(html) if html else None))


def report(
    bundles: List[Path] = typer.Argument(..., help="One bundle, or two to include their diff."),
    out: Path = typer.Option(
        ..., "--out", "-o", help="The HTML file to write (self-contained; open it from anywhere)."
    ),
    full: bool = typer.Option(False, "--full", help="Unbounded text diffs in the diff section."),
    process: ProcessOption = None,
    module: List[str] = typer.Option(
        [], "--module", help="With two bundles: only these modules in the diff (name or id; repeatable)."
    ),
    old_m: OldModuleFlag = None,
) -> None:
    """Write one self-contained HTML report: run summary, modules, pass timelines, logs, and the diff of two bundles."""
    from xlatools import console
    from xlatools.compare.report import write_report
    from xlatools.errors import UsageError

    if len(bundles) > 2:
        raise UsageError(
            f"report takes one or two bundles, got {len(bundles)}", hint="xlatools report A [B] -o report.html"
        )
    if module and len(bundles) != 2:
        raise UsageError(
            "--module picks modules of the diff: give two bundles",
            hint="xlatools report A B --module NAME -o report.html",
        )
    write_report(list(bundles), out, full=full, process=process, modules=list(module))
    console.info(f"report: {out}")
