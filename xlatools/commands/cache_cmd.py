"""`xlatools cache list|prune`: the cached step environments of release bisections."""

from __future__ import annotations

from typing import List

import typer

from xlatools.commands.options import DryRunOption, JsonOption

app = typer.Typer(
    help="Show and free cached environments (one per jax release used by `bisect releases`).", no_args_is_help=True
)


@app.command("list")
def list_(as_json: JsonOption = False) -> None:
    """List the cached environments with their size and last use."""
    import json
    from dataclasses import asdict

    from xlatools.bisect.envs import envs_root, list_envs

    envs = list_envs()
    if as_json:
        typer.echo(json.dumps({"root": str(envs_root()), "environments": [asdict(e) for e in envs]}, indent=2))
        return
    for env in envs:
        state = "" if env.complete else "  (unfinished)"
        typer.echo(f"{env.name:<34} {env.bytes / 1e6:8.1f} MB  last used {env.last_used or '-'}{state}")
    typer.echo(f"{len(envs)} environment(s), {sum(e.bytes for e in envs) / 1e6:.1f} MB under {envs_root()}")


@app.command("prune")
def prune(
    names: List[str] = typer.Argument(None, help="Environments to remove (names from `xlatools cache list`)."),
    all_: bool = typer.Option(False, "--all", help="Remove every cached environment."),
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
) -> None:
    """Remove cached environments: the named ones, --all, or (with no names) the unfinished ones.

    --dry-run says what would be removed; --json lists what was (or would be) removed."""
    import json
    from dataclasses import asdict

    from xlatools.bisect.envs import prune as prune_envs

    removed = prune_envs(list(names or []), all_, not names and not all_, dry_run)
    if as_json:
        typer.echo(json.dumps({"dry_run": dry_run, "removed": [asdict(e) for e in removed]}, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    for env in removed:
        typer.echo(f"{verb} {env.name} ({env.bytes / 1e6:.1f} MB)")
    typer.echo(f"{verb} {len(removed)} environment(s), {sum(e.bytes for e in removed) / 1e6:.1f} MB")
