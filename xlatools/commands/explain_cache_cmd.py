"""`xlatools explain-cache RUN_A [RUN_B]`: why did it compile again (docs/cache.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import JsonOption


def explain_cache(
    run_a: Path = typer.Argument(..., help="A run bundle (or artifacts/latest)."),
    run_b: Optional[Path] = typer.Argument(
        None, help="A later run of the same program: its persistent-cache misses are explained against RUN_A."
    ),
    as_json: JsonOption = False,
) -> None:
    """Explain recompiles and persistent-cache misses part by part: argument signature, HLO, compile options, XLA flags, jaxlib, devices, process, cache folder.

    With one run: each function compiled again in its process. With two: run B's recompiles, and each compile of
    run B that missed jax's persistent cache although run A compiled that function. Exit 0: nothing recompiled or
    missed; 1: some were (each explained); 2: bad input; 3: a run whose traces were not recorded."""
    import json

    from xlatools import console
    from xlatools.cache_explain.api import exit_code, explain_cache as explain
    from xlatools.cache_explain.view import report_lines
    from xlatools.records import to_json

    report = explain(run_a, run_b)
    if as_json:
        typer.echo(json.dumps(to_json(report), indent=2))
    else:
        typer.echo("\n".join(report_lines(report)))
    console.append_job_summary(f"### xlatools explain-cache\n\n{report.summary}\n")
    raise typer.Exit(exit_code(report))
