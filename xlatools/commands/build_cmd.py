"""`xlatools build`: a profile becomes a jaxlib build in a container (or on the host)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import DryRunOption, JsonOption, OutOption, ProfileOption, QuietOption, invocation


def build(
    profile: ProfileOption,
    source: Path = typer.Option(
        Path("."), "--source", help="The JAX source tree to build (default: the current directory)."
    ),
    lock: Optional[Path] = typer.Option(
        None, "--lock", help="Lock file whose XLA pin is applied (and verified) before the build."
    ),
    local: bool = typer.Option(False, "--local", help="Run the same plan on this host, without Docker."),
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    out: OutOption = Path("artifacts/builds"),
    keep_container: bool = typer.Option(False, "--keep-container", help="Leave the build container for inspection."),
    rebuild_image: bool = typer.Option(
        False, "--rebuild-image", help="Build the image again, without the layer cache, even if its content tag exists."
    ),
    jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, max=100_000, help="bazel --jobs (overrides the profile's bazel.jobs)."
    ),
    quiet: QuietOption = None,
) -> None:
    """Build jaxlib wheels for a profile: in a Docker container by default.

    Before the build command runs, the profile's bazel config is written into
    the tree's .bazelrc.user (managed block) and the lock's XLA pin is applied.
    With --json, the plan (with --dry-run) or the build manifest goes to stdout.
    """
    import json

    from xlatools.builder.orchestrate import BuildRequest, prepare_build, preview_tree, run_build
    from xlatools.console import Reporter
    from xlatools.records import to_json

    reporter = Reporter(quiet=bool(quiet))
    prepared = prepare_build(
        BuildRequest(
            profile=profile,
            source=source,
            out_root=out,
            lock=lock,
            local=local,
            jobs=jobs,
            keep_container=keep_container,
            rebuild_image=rebuild_image,
        ),
        reporter,
    )
    if dry_run:
        preview = preview_tree(prepared)
        if as_json:
            typer.echo(json.dumps({**to_json(prepared.plan), "tree": to_json(preview)}, indent=2))
        else:
            _print_plan(prepared.plan, preview.bazelrc, preview.pin_changed)
        return
    from xlatools.doctor.signatures import explain_failure

    # A failed build's log is scanned for known causes.
    outcome = run_build(prepared, reporter, explain=explain_failure, argv=invocation().argv)
    if as_json:  # the manifest also when the build failed: CI reads it either way
        typer.echo(json.dumps(to_json(outcome.manifest), indent=2))
        if outcome.error is not None:
            outcome.error.reported_json = True  # the manifest says what failed; stdout stays one document
    manifest = outcome.raise_for_status()
    if as_json:
        return
    for wheel in manifest.wheels:
        reporter.info(f"  {wheel.dist_path}  sha256 {wheel.sha256[:16]}...  {wheel.size} bytes")
    reporter.result(f"build ok in {manifest.durations['total_s']:.1f} s; record: {manifest.bundle}")


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
    for source in plan.credentials.describe() if plan.credentials else []:  # where from, never the values
        out.print(f"secret    {source} -> {plan.private_rc} (written at the start, removed at the end)")
    out.print(f"wheels    {plan.stage_dir} -> {plan.dist_dir} (and the build bundle)")
    out.print(f".bazelrc.user: config '{plan.config_name}' would be {bazelrc_action}:")
    for line in plan.bazelrc.splitlines():
        out.print(f"          {console.escape(line)}")
    if pin_changed:
        out.print(f"pin       would change: {', '.join(pin_changed)}")
