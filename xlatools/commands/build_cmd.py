"""`xlatools build`: a profile becomes a jaxlib build in a container (or on the host)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def build(
    profile: str = typer.Option(..., "--profile", "-p", help="Profile name or path to a YAML file."),
    source: Path = typer.Option(Path("."), "--source", help="The JAX source tree to build (default: the current directory)."),
    lock: Optional[Path] = typer.Option(None, "--lock", help="Lock file whose XLA pin is applied (and verified) before the build."),
    local: bool = typer.Option(False, "--local", help="Run the same plan on this host, without Docker."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; change nothing, start nothing."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable plan (with --dry-run) or result."),
    out: Path = typer.Option(Path("artifacts/builds"), "--out", help="Where build bundles (manifest, build.log, wheels) go."),
    keep_container: bool = typer.Option(False, "--keep-container", help="Leave the build container for inspection."),
    rebuild_image: bool = typer.Option(False, "--rebuild-image", help="Build the image again, without the layer cache, even if its content tag exists."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="bazel --jobs (overrides the profile's bazel.jobs)."),
) -> None:
    """Build jaxlib wheels for a profile: in a Docker container by default.

    Before the build command runs, the profile's bazel config is written into
    the tree's .bazelrc.user (managed block) and the lock's XLA pin is applied.
    """
    import json
    import os
    import secrets

    from xlatools import console
    from xlatools.builder.plan import BuildOptions, check_source, plan_build
    from xlatools.builder.tree import apply_pin, load_lock_file, lock_local_xla, lock_summary, write_bazelrc_block
    from xlatools.profiles import load

    resolved = load(profile)
    lock_obj = load_lock_file(lock) if lock else None
    local_xla = lock_local_xla(lock_obj) if lock_obj else None  # else the profile's source.xla.local_path
    options = BuildOptions(
        source=source,
        out_root=out,
        dist_dir=Path(resolved.profile.build.output_dir),
        cache_root=_cache_root(),
        run_id=secrets.token_hex(4),
        uid=os.getuid(),
        gid=os.getgid(),
        user_name=_user_name(),
        local=local,
        jobs=jobs,
        local_xla=local_xla,
    )
    plan = plan_build(resolved, options)
    check_source(plan, uses_buildpy=resolved.profile.build.command is None)
    for note in plan.notes:
        console.warn(note)
    if lock is None and (Path.cwd() / "xlatools.lock").is_file():
        console.warn("./xlatools.lock exists but is not used; pass --lock xlatools.lock to build with its pin")

    if dry_run:
        changes = write_bazelrc_block(Path(plan.source), plan.config_name, plan.bazelrc, dry_run=True)
        pin_changed, pin_diff = apply_pin(lock_obj, Path(plan.source), dry_run=True) if lock_obj else ((), "")
        if as_json:
            data = plan.to_dict()
            data["tree"] = {"bazelrc": changes.bazelrc_action, "pin_changed": list(pin_changed), "pin_diff": pin_diff}
            typer.echo(json.dumps(data, indent=2))
        else:
            _print_plan(plan, changes.bazelrc_action, pin_changed)
        return

    client = None
    if not local:
        from xlatools.container import connect

        client = connect()  # exit 3 before anything is written
    pin_changed: tuple[str, ...] = ()
    if lock_obj is not None:  # first: a tree that cannot be pinned is refused before anything else changes
        pin_changed, _ = apply_pin(lock_obj, Path(plan.source), dry_run=False)
        console.step(f"pin from {lock}: {', '.join(pin_changed) or 'tree already agrees with the lock'}")
    changes = write_bazelrc_block(Path(plan.source), plan.config_name, plan.bazelrc, dry_run=False)
    console.step(f"{plan.source}/.bazelrc.user: config '{plan.config_name}' {changes.bazelrc_action}")
    if not changes.bazelrc_imported:
        console.warn(f"{plan.source}/.bazelrc does not import .bazelrc.user, so bazel will not see "
                     f"--config={plan.config_name}; add `try-import %workspace%/.bazelrc.user` to it")

    from xlatools.builder.execute import execute

    console.step("$ " + " ".join(plan.argv))
    outcome = execute(
        plan,
        out_root=out,
        tree_info={"bazelrc": changes.bazelrc_action, "pin_changed": list(pin_changed)},
        pin=lock_summary(lock_obj, lock),
        keep_container=keep_container,
        rebuild_image=rebuild_image,
        client=client,
    )
    if as_json:  # the manifest also when the build failed: CI reads it either way
        typer.echo(json.dumps(outcome.manifest, indent=2))
    manifest = outcome.raise_for_status()
    if as_json:
        return
    for wheel in manifest["wheels"]:
        console.info(f"  {wheel['dist_path']}  sha256 {wheel['sha256'][:16]}...  {wheel['size']} bytes")
    console.info(f"build ok in {manifest['durations']['total_s']:.1f} s; record: {manifest['bundle']}")


def _cache_root() -> Path:
    import os

    from platformdirs import user_cache_dir

    return Path(os.environ.get("XLATOOLS_CACHE_DIR") or user_cache_dir("xlatools")).expanduser()


def _user_name() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "xlatools"


def _print_plan(plan, bazelrc_action: str, pin_changed) -> None:
    import shlex

    from xlatools import console

    out = console.out()
    out.print(f"profile   {plan.profile} ({' -> '.join(plan.chain)})")
    out.print(f"mode      {plan.mode}")
    if plan.image:
        how = "ready image" if plan.image.prebuilt else f"built from {plan.image.dockerfile}"
        out.print(f"image     {plan.image.ref} ({how})")
        for key, value in plan.image.build_args.items():
            out.print(f"          --build-arg {key}={value}")
        out.print(f"container {plan.container_name} (user {plan.user}, network {plan.network})")
    for mount in plan.mounts:
        mode = "ro" if mount.read_only else "rw"
        out.print(f"mount     {mount.source} -> {mount.target} ({mode}; {mount.purpose})")
    for key, value in plan.env.items():
        out.print(f"env       {key}={value}")
    out.print(f"workdir   {plan.workdir}")
    out.print(f"command   {shlex.join(plan.argv)}")
    out.print(f"wheels    {plan.stage_dir} -> {plan.dist_dir} (and the build bundle)")
    out.print(f".bazelrc.user: config '{plan.config_name}' would be {bazelrc_action}:")
    for line in plan.bazelrc.splitlines():
        out.print(f"          {console.escape(line)}")
    if pin_changed:
        out.print(f"pin       would change: {', '.join(pin_changed)}")
