"""`xlatools clean`: remove build containers left behind (by label), and on request the build images."""

from __future__ import annotations

import typer

from xlatools.commands.options import DryRunOption, JsonOption


def clean(
    images: bool = typer.Option(
        False, "--images", help="Also remove the images xlatools built (rebuilt on the next build)."
    ),
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
) -> None:
    """Remove xlatools build containers left behind (--keep-container, a killed client).

    --dry-run lists what would be removed; --json lists what was (or would be) removed."""
    import json

    from xlatools import console
    from xlatools.builder.engine import connect, leftover_containers, managed_images, remove_container, remove_image

    client = connect()
    containers = leftover_containers(client)
    found_images = managed_images(client) if images else []
    rows = [{"type": "container", "name": c.name, "id": c.short_id, "status": c.status} for c in containers]
    rows += [
        {"type": "image", "name": ", ".join(i.tags) or "<untagged>", "id": i.short_id, "status": ""}
        for i in found_images
    ]
    if not dry_run:
        for container in containers:  # containers first: an image in use cannot go
            remove_container(container, console.COMMAND)
        for image in found_images:
            remove_image(client, image)
    if as_json:
        typer.echo(json.dumps({"dry_run": dry_run, "removed" if not dry_run else "would_remove": rows}, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    for row in rows:
        console.info(f"{verb} {row['type']} {row['name']} ({row['id']}{', ' + row['status'] if row['status'] else ''})")
    console.info(f"{verb} {len(containers)} container(s)" + (f" and {len(found_images)} image(s)" if images else ""))
