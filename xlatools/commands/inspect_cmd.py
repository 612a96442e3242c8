"""`xlatools inspect`: read an XLA dump (a run bundle or a dump directory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import JsonOption, OldModuleFlag, ProcessOption, followed_run


def inspect(
    path: Path = typer.Argument(
        ...,
        help="A run bundle (or artifacts/latest; a replay or reduce bundle reads the run it was made from), or an XLA dump directory.",
    ),
    module: Optional[str] = typer.Option(
        None,
        "--module",
        help="One module, by id (10 or 0010) or name (jit_f; a name several modules share needs the id): its pass sequence.",
    ),
    include_all: bool = typer.Option(
        False,
        "--all",
        help="Also list jax's helper modules (jit_iota, jit_convert_element_type, ...), as replay --all.",
    ),
    old_m: OldModuleFlag = None,
    as_json: JsonOption = False,
    process: ProcessOption = None,
) -> None:
    """The run (status, command, versions, presets, flags) and its modules (source line, stages,
    per-pass steps, instruction counts, files, bytes), or one module's passes."""
    from xlatools import console
    from xlatools.records import to_json
    from xlatools.run.dumps import index_dump
    from xlatools.run.process_dumps import choose_dump
    from xlatools.run.runinfo import read_run_info

    run = read_run_info(path := followed_run(path))  # of a replay or reduce bundle: the run it was made from
    if run is not None and module is None and not (Path(run.bundle) / "xla_dump").is_dir():
        note = "this bundle has no xla_dump/ (the run did not dump; run again with --dump)"
        if as_json:
            typer.echo(json.dumps({"run": to_json(run), "root": None, "modules": [], "note": note}, indent=2))
        else:
            typer.echo("\n".join(run.lines()))
            _show_metrics(run)
            console.info(note)
        return
    choice = choose_dump(path, process)  # of a multi-process run: one process's dump
    run = run or (read_run_info(choice.bundle) if choice.bundle is not None else None)  # BUNDLE/xla_dump/pN
    root = choice.root
    index = index_dump(root)
    if module is None:
        _show_listing(run, choice, index, path, as_json, include_all)
    else:
        _show_module(run, root, index, module, as_json)


def _show_listing(run, choice, index, path: Path, as_json: bool, include_all: bool) -> None:
    """The run and every module of its dump (one process's, for a multi-process run); jax's helper modules only
    with --all (replay's rule: replay/helper_modules.is_helper)."""
    from xlatools import console
    from xlatools.records import to_json
    from xlatools.run.dumps import modules_table
    from xlatools.replay.helper_modules import is_helper

    root = choice.root
    group, lines = _processes(choice)
    helpers = [] if include_all else [m for m in index.sorted_modules() if is_helper(m.name)]
    left_out = [f"{m.id:04d} {m.name}" for m in helpers]
    listing = to_json(index.listing())
    listing["modules"] = [m for m in listing["modules"] if m["id"] not in {h.id for h in helpers}]
    if as_json:
        data = {"run": to_json(run) if run else None, **group, **listing, "helpers_left_out": left_out}
        typer.echo(json.dumps(data, indent=2))
        return
    if run is not None:
        typer.echo("\n".join(run.lines() + lines) + "\n")
        _show_metrics(run, include_all)
    else:
        console.info("no manifest.json: a plain XLA dump folder, so no record of the run")
    if choice.note:
        differ = ", ".join(group["modules_differing_between_processes"]) or "none"
        console.info(f"showing {choice.note}; modules whose HLO differs between processes: {differ}")
    totals = index.totals()
    console.err().print(
        f"{console.escape(str(root))}: {totals['modules']} modules, {totals['files']} files, "
        f"{totals['bytes']} bytes ({index.layout})"
    )
    if index.modules:
        typer.echo(modules_table(index, leave_out={m.id for m in helpers}))
    if left_out:
        console.info(f"left out as jax helper modules: {', '.join(left_out)} (list them with --all)")
    console.err().print(f"HTML report: xlatools report {console.escape(str(path))} -o report.html")


def _show_metrics(run, include_all: bool = True) -> None:
    """The run's metrics (docs/metrics.md): how they were measured, each process, each compiled module (jax's
    helper modules only with --all, as in the dump's table)."""
    from dataclasses import replace

    from xlatools import console
    from xlatools.replay.helper_modules import is_helper
    from xlatools.run.metrics_view import module_rows, process_lines

    if run.metrics is None:
        return
    typer.echo("\n".join(process_lines(run.metrics)))
    shown = [m for m in run.metrics.modules if include_all or not is_helper(m.name)]
    if shown:
        typer.echo(console.columns(module_rows(replace(run.metrics, modules=shown))) + "\n")


def _show_module(run, root: Path, index, module: str, as_json: bool) -> None:
    """One module: its stages, instruction counts, GPU files and per-pass steps."""
    from xlatools import console
    from xlatools.records import to_json
    from xlatools.run.dumps import pass_details

    chosen = index.find(module)
    steps = pass_details(index, chosen)
    if as_json:
        typer.echo(
            json.dumps(
                {"root": str(root), "run": to_json(run) if run else None, "module": to_json(chosen.detail())}, indent=2
            )
        )
        return
    say = console.err().print
    made = f" (created at {chosen.source.file}:{chosen.source.line})" if chosen.source else ""
    say(
        console.escape(
            "\n".join(
                [
                    f"module {chosen.id:04d} {chosen.name}{made}: stages {', '.join(sorted(chosen.stages))};"
                    f" instructions {chosen.instructions_before} before, {chosen.instructions_after} after "
                    "optimisation"
                ]
                + _gpu_file_lines(root, chosen.gpu_files)
            )
        )
    )
    if not steps:
        say("no per-pass dumps for this module (run with --preset dump:passes or --preset dump:full)")
        for name in chosen.files:
            typer.echo(name)
        return
    typer.echo(
        console.columns(
            [("step", "pipeline", "after pass", "changed", "instructions")]
            + [
                (
                    f"{s.step:04d}",
                    s.pipeline,
                    s.pass_name,
                    {True: "yes", False: "no", None: "?"}[s.changed],
                    str(s.instructions),
                )
                for s in steps
            ]
        )
    )


def _gpu_file_lines(root, gpu_files: dict[str, list[str]]) -> list[str]:
    """What only a GPU compile writes, by kind: count, bytes, the first names."""
    lines = []
    for kind, names in sorted(gpu_files.items()):
        size = sum((root / n).stat().st_size for n in names if (root / n).is_file())
        more = f" and {len(names) - 4} more" if len(names) > 4 else ""
        lines.append(f"GPU {kind.replace('_', ' ')}: {len(names)} file(s), {size} bytes: {', '.join(names[:4])}{more}")
    return lines


def _processes(choice) -> tuple[dict, list[str]]:
    """A multi-process run's part of the output: (JSON fields, lines for people); empty for one process."""
    from xlatools.records import to_json
    from xlatools.run.process_dumps import differing_modules, process_dirs, process_lines, process_rows

    if choice.process is None:
        return {}, []
    rows = process_rows(choice.bundle)
    differ = differing_modules(process_dirs(choice.root.parent))
    return (
        {"process": choice.process, "processes": to_json(rows), "modules_differing_between_processes": differ},
        process_lines(rows, choice),
    )
