"""`xlatools presets ...`: list and show run presets (dump, log, jax, frontend)."""

from __future__ import annotations

import json
from typing import Optional

import typer

app = typer.Typer(help="List and show the presets `xlatools run --preset` accepts.", no_args_is_help=True, rich_markup_mode=None)

_PROFILE_HELP = "Also show the presets a profile defines (run.define_presets)."


def _catalog(profile: Optional[str]):
    from xlatools.run.presets.catalog import Catalog
    from xlatools.run.execute import profile_run

    info, define = profile_run(profile)
    return Catalog.load(define, f"profile {info.name} (run.define_presets)")


def _versions(data: dict) -> str:
    low, high = data["min_jaxlib"], data["max_jaxlib"]
    if low and high:
        return f"{low} .. {high}"
    return f">= {low}" if low else f"<= {high}" if high else "any"


@app.command("list")
def list_presets(
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help=_PROFILE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every preset: kind, name, jaxlib versions, description."""
    from xlatools import console

    rows = [preset.to_json() for preset in _catalog(profile).by_kind()]
    if as_json:
        typer.echo(json.dumps({"presets": rows}, indent=2))
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("kind", "name", "jaxlib", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["kind"], row["name"], _versions(row), row["description"])
    console.out().print(table)
    console.err().print("use: xlatools run --preset NAME (KIND:NAME where two kinds share a name, e.g. log:passes)")


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Preset name, or KIND:NAME."),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help=_PROFILE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """One preset: the XLA flags, environment and vmodule it sets, and the jaxlib versions that accept it."""
    from xlatools import console

    data = _catalog(profile).get(name).to_json()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    write = console.out().print
    esc = console.escape
    write(f"{data['kind']}:{data['name']}  {esc(data['description'])}")
    write(f"  jaxlib:    {_versions(data)}")
    if data["frontend"]:
        write(f"  frontend:  {data['frontend']} (picked where the target has it, unless --frontend says otherwise)")
    write(f"  defined:   {esc(data['source'])}")
    for flag in data["xla_flags"]:
        write(f"  XLA flag:  {esc(flag)}")
    for key, value in data["env"].items():
        write(f"  env:       {esc(key)}={esc(value)}")
    for module, level in data["vmodule"].items():
        write(f"  vmodule:   {esc(module)}={level}")
    if data["kind"] == "dump":
        write("  (xlatools adds --xla_dump_to=<bundle>/xla_dump and turns the persistent compilation cache off)")
