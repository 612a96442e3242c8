"""`xlatools presets ...`: list and show run presets (dump, log, jax, frontend)."""

from __future__ import annotations

import json

import typer

from xlatools.commands.options import JsonOption, ProfileOption

app = typer.Typer(
    help="List and show the presets `xlatools run --preset` accepts.", no_args_is_help=True, rich_markup_mode=None
)


def _catalog(profile: str | None):
    from xlatools.run.execute import profile_run
    from xlatools.run.presets.catalog import Catalog

    info, define = profile_run(profile)
    return Catalog.load(define, f"profile {info.name} (run.define_presets)")


@app.command("list")
def list_presets(profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Every preset: kind, name, jaxlib versions, description (with --profile, also the ones it defines)."""
    from xlatools import console
    from xlatools.records.base import to_json

    rows = [preset.info() for preset in _catalog(profile).by_kind()]
    if as_json:
        typer.echo(json.dumps({"presets": to_json(rows)}, indent=2))
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("kind", "name", "jaxlib", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(row.kind, row.name, row.versions(), row.description)
    console.out().print(table)
    console.err().print("use: xlatools run --preset NAME (KIND:NAME where two kinds share a name, e.g. log:passes)")


@app.command("show")
def show(
    name: str = typer.Argument(..., help="Preset name, or KIND:NAME."),
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """One preset: the XLA flags, environment and vmodule it sets, and the jaxlib versions that accept it
    (with --profile, the ones it defines count too)."""
    from xlatools import console
    from xlatools.records.base import to_json

    info = _catalog(profile).get(name).info()
    if as_json:
        typer.echo(json.dumps(to_json(info), indent=2))
        return
    write = console.out().print
    esc = console.escape
    write(f"{info.kind}:{info.name}  {esc(info.description)}")
    write(f"  jaxlib:    {info.versions()}")
    if info.frontend:
        write(f"  frontend:  {info.frontend} (picked where the target has it, unless --frontend says otherwise)")
    write(f"  defined:   {esc(info.source)}")
    for flag in info.xla_flags:
        write(f"  XLA flag:  {esc(flag)}")
    for key, value in info.env.items():
        write(f"  env:       {esc(key)}={esc(value)}")
    for module, level in info.vmodule.items():
        write(f"  vmodule:   {esc(module)}={level}")
    if info.kind == "dump":
        write("  (xlatools adds --xla_dump_to=<bundle>/xla_dump and turns the persistent compilation cache off)")
