"""`xlatools clean`: remove build containers left behind (by label)."""

from __future__ import annotations

import typer


def clean(
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be removed; remove nothing."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable list of what was removed."),
) -> None:
    """Remove xlatools build containers left behind (e.g. by --keep-container or a killed client)."""
    import json

    from xlatools import console
    from xlatools.container import connect, leftover_containers, remove_container

    client = connect()
    found = leftover_containers(client)
    rows = [{"name": c.name, "id": c.short_id, "status": c.status, "labels": c.labels} for c in found]
    if not dry_run:
        for container in found:
            remove_container(container)
    if as_json:
        typer.echo(json.dumps({"removed" if not dry_run else "would_remove": rows}, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    for row in rows:
        console.info(f"{verb} {row['name']} ({row['id']}, {row['status']})")
    console.info(f"{verb} {len(rows)} container(s)")
