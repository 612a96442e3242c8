"""`xlatools profiles ...`: list, show, validate and describe profiles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.options import JsonOption

app = typer.Typer(
    help="List, show, validate and describe build-and-debug profiles.", no_args_is_help=True, rich_markup_mode=None
)


@app.command("list")
def list_profiles(as_json: JsonOption = False) -> None:
    """Every profile on the search path: name, description, file."""
    from xlatools import console
    from xlatools.errors import XlaToolsError
    from xlatools.profiles import load, search
    from xlatools.profiles.loader import display_path

    rows = []
    for name, files in search.discover().items():
        for file in files:
            row = {"name": name, "file": display_path(file.path), "description": "", "valid": True}
            if len(files) > 1:
                row.update(valid=False, description=f"duplicate name ({len(files)} files)")
            else:
                try:
                    row["description"] = load(str(file.path)).profile.description
                except XlaToolsError as exc:
                    row.update(valid=False, description=f"invalid: {exc.message} (see `xlatools profiles validate`)")
            rows.append(row)
    if as_json:
        typer.echo(json.dumps({"profiles": rows, "search_path": [str(d) for d in search.search_dirs()]}, indent=2))
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("name", "description", "file"):
        table.add_column(column)
    for row in rows:
        style = None if row["valid"] else "red"
        table.add_row(row["name"], row["description"], row["file"], style=style)
    console.out().print(table)


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Profile name or path to a YAML file."),
    as_json: JsonOption = False,
    explain: bool = typer.Option(False, "--explain", help="Show which file and line set each value."),
) -> None:
    """The resolved profile, after `extends` and merging (--json: as JSON)."""
    from xlatools import console
    from xlatools.profiles import load
    from xlatools.profiles.explain import explain_rows

    resolved = load(name)
    data = resolved.profile.model_dump(mode="json")
    if as_json:
        payload = {
            "name": resolved.profile.name,
            "file": str(resolved.path),
            "chain": list(resolved.chain),
            "profile": data,
        }
        if explain:
            payload["provenance"] = [{"key": k, "value": v, "origin": o} for k, v, o in explain_rows(resolved)]
        typer.echo(json.dumps(payload, indent=2))
        return
    if explain:
        _print_explain(resolved.profile.name, resolved.chain, explain_rows(resolved))
        return
    import yaml

    console.err().print(f"# {resolved.profile.name} ({resolved.path}); chain: {' -> '.join(resolved.chain)}")
    typer.echo(
        yaml.safe_dump(resolved.profile.model_dump(mode="json", exclude_defaults=True), sort_keys=False).rstrip()
    )


def _print_explain(name: str, chain, rows) -> None:
    """The origin is never cut: folders are abbreviated (legend on stderr), values wrap instead."""
    import os
    import shutil
    import sys

    from xlatools import console
    from xlatools.profiles.explain import explain_table, origin_roots, short_origin

    roots = origin_roots()
    shown, used = [], {}
    for key, value, origin in rows:
        short, label = short_origin(origin, roots)
        shown.append((key, json.dumps(value), short))
        if label is not None and label not in (".", "~"):
            used[label] = dict(roots)[label]
    # A terminal or COLUMNS sets the width; a pipe or a CI log gets whole lines.
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() or os.environ.get("COLUMNS") else None
    typer.echo(f"{name}: {' -> '.join(chain)}")
    typer.echo(explain_table(shown, width))
    for label, folder in used.items():
        console.err().print(console.escape(f"{label} = {folder}"))


def _preset_problems(resolved) -> list[str]:
    """run.define_presets checked as `run --preset` will read them (kinds, keys, flag values, levels), and the
    presets run.presets and run.dump_preset name (they exist, and the dump preset is one)."""
    from xlatools.errors import ProfileError
    from xlatools.profiles.explain import explain_rows
    from xlatools.run.presets.catalog import Catalog

    run = resolved.profile.run
    try:
        catalog = Catalog.load(dict(run.define_presets), f"{resolved.path} [run.define_presets]")
        where = {key: origin for key, _, origin in explain_rows(resolved)}
        catalog.check_profile(list(run.presets), run.dump_preset, where)
    except ProfileError as exc:
        return [p.render() for p in exc.problems] or [exc.message]
    return []


@app.command("validate")
def validate(
    paths: Optional[List[str]] = typer.Argument(
        None, help="Profile names or files; default: every profile on the search path."
    ),
    as_json: JsonOption = False,
) -> None:
    """Check profiles: schema, extends, duplicates, and debug-info traps. Exit 2 on any problem."""
    from xlatools import console
    from xlatools.debuginfo import check_debug_info
    from xlatools.errors import ProfileError, XlaToolsError
    from xlatools.profiles import load, search

    refs: list[str] = list(paths or [])
    results = []
    if not refs:
        for name, files in search.discover().items():
            if len(files) > 1:
                problem = search.duplicate_problem(name, files)
                results.append({"profile": name, "ok": False, "problems": [problem.render()], "warnings": []})
            else:
                refs.append(str(files[0].path))
        if not refs and not results:
            raise ProfileError(
                "no profiles found on the search path", hint=", ".join(str(d) for d in search.search_dirs())
            )
    for ref in refs:
        try:
            resolved = load(ref)
        except XlaToolsError as exc:
            problems = [p.render() for p in exc.problems] or [exc.message + (f" ({exc.hint})" if exc.hint else "")]
            results.append({"profile": ref, "ok": False, "problems": problems, "warnings": []})
            continue
        problems = _preset_problems(resolved)
        results.append(
            {
                "profile": resolved.profile.name,
                "file": str(resolved.path),
                "ok": not problems,
                "problems": problems,
                "warnings": check_debug_info(resolved.profile),
            }
        )
    failed = [r for r in results if not r["ok"]]
    if as_json:
        typer.echo(json.dumps({"ok": not failed, "results": results}, indent=2))
    else:
        for result in results:
            if result["ok"]:
                console.err().print(f"[green]ok[/green]      {result['profile']}  ({result['file']})")
            else:
                console.err().print(f"[red]invalid[/red] {result['profile']}")
                for problem in result["problems"]:
                    console.err().print(f"  - {console.escape(problem)}")
            for warning in result["warnings"]:
                console.warn(f"{result['profile']}: {warning}")
    if failed:
        error = ProfileError(f"{len(failed)} of {len(results)} profiles are invalid")
        error.reported_json = as_json  # the report above says which and why; stdout stays one document
        raise error


@app.command("schema")
def schema(
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write to this file instead of stdout."),
) -> None:
    """The profile JSON Schema (for editors: yaml-language-server, VS Code)."""
    from xlatools.profiles.model import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        from xlatools.fsutil import write_output

        write_output(output, text, "--output")
