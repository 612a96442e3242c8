"""`xlatools bazelrc`: render a profile's bazel settings as a named config."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import DryRunOption, ProfileOption


def bazelrc(
    profile: ProfileOption,
    config_name: str = typer.Option("xlatools", "--config-name", help="Name of the bazel config (build:NAME lines)."),
    output: Optional[Path] = typer.Option(
        None, "-o", "--output", help="Write the config to this file (replaced whole)."
    ),
    source: Optional[Path] = typer.Option(
        None, "--source", help="A JAX source tree: update the managed block in its .bazelrc.user, keeping the rest."
    ),
    dry_run: DryRunOption = False,
    build_command: bool = typer.Option(
        False,
        "--build-command",
        help="Print only the build.py line that builds "
        "with this config (the profile's wheels, CUDA/cuDNN/NCCL versions, compute "
        "capabilities), to run in the JAX tree.",
    ),
) -> None:
    """Render a profile's bazel settings as one named bazel config; the build.py line that uses it goes to stderr.

    With --source, --dry-run shows the change to .bazelrc.user and writes nothing."""
    from xlatools import console
    from xlatools.bazelrc import render
    from xlatools.debuginfo import check_debug_info
    from xlatools.errors import UsageError
    from xlatools.fsutil import check_output, write_output
    from xlatools.profiles import load

    if output is not None and source is not None:
        raise UsageError("--output and --source are exclusive", hint="pick one destination")
    if output is not None:
        check_output(output, "--output")
    resolved = load(profile)
    line = _build_line(resolved.profile, config_name)
    if build_command:
        if line is None:
            raise UsageError(
                f"profile {profile}: no build.py line (it sets build.command, builds for ROCm, or lists no wheels)",
                hint="`xlatools build --dry-run` shows the command a build runs",
            )
        typer.echo(line)
        return
    for warning in check_debug_info(resolved.profile):
        console.warn(warning)
    text = render(resolved, config_name)
    if resolved.profile.bazel.remote_credentials is not None:
        console.info(
            "the profile's remote credentials are not written into this config (nor anywhere xlatools "
            "writes); `xlatools build` hands them to bazel in a private rc; when you run bazel yourself, "
            f"give them in your own rc: `bazel --bazelrc=PRIVATE_RC build --config={config_name}` "
            "(docs/building.md, team setup)"
        )
    if source is not None:
        _write_into_tree(source, config_name, text, dry_run)
    elif output is not None:
        write_output(output, text, "--output")
        console.info(f"wrote bazel config '{config_name}' to {output}")
    else:
        typer.echo(text, nl=False)
    if line is not None:
        console.info(f"build with it in the JAX tree: {line}")


def _build_line(profile, config_name: str) -> str | None:
    import shlex

    from xlatools.builder.command import manual_buildpy_argv

    argv = manual_buildpy_argv(profile, config_name)
    return shlex.join(argv) if argv else None


def _write_into_tree(source: Path, config_name: str, text: str, dry_run: bool) -> None:
    from xlatools import console
    from xlatools.bazelrc import not_imported_warning, write_tree_block
    from xlatools.errors import UsageError

    if not source.is_dir():
        raise UsageError(f"--source {source}: not a directory", hint="point it at the root of a JAX checkout")
    markers = ("WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel", ".bazelrc")
    if not any((source / name).exists() for name in markers):
        raise UsageError(
            f"--source {source}: not a bazel workspace (none of {', '.join(markers)} found)",
            hint="point it at the root of a JAX checkout",
        )
    written = write_tree_block(source, config_name, text, dry_run)
    if not written.imported:
        console.warn(not_imported_warning(source, config_name))
    if dry_run:
        typer.echo(written.diff, nl=False)
        console.info(f"dry run: {written.path} would be {written.action if written.changed else 'left unchanged'}")
    elif written.changed:
        console.info(f"{written.path}: config '{config_name}' {written.action}; build with --config={config_name}")
    else:
        console.info(f"{written.path}: config '{config_name}' already up to date")
