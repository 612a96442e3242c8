"""`xlatools build` end to end, callable without typer: request -> prepared plan ->
(dry-run preview | tree prepared, build executed into a bundle)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from xlatools.builder.execute import BuildOutcome, Explain
from xlatools.pin.lock import Lock
from xlatools.records.build import BuildPlan, TreeInfo

if TYPE_CHECKING:
    from xlatools.console import Reporter


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    """What the user asked for (the command line)."""

    profile: str
    source: Path
    out_root: Path
    lock: Path | None = None
    local: bool = False
    jobs: int | None = None
    keep_container: bool = False
    rebuild_image: bool = False


@dataclass(frozen=True)
class PreparedBuild:
    plan: BuildPlan
    lock: Lock | None
    request: BuildRequest


@dataclass(kw_only=True)
class TreePreview(TreeInfo):
    """What a build would change in the source tree (`--dry-run`)."""

    pin_diff: str = ""


def prepare_build(request: BuildRequest, reporter: Reporter) -> PreparedBuild:
    """Profile, lock and machine -> a checked plan. Writes nothing."""
    import os
    import secrets

    from xlatools.builder.plan import BuildOptions, check_source, plan_build
    from xlatools.builder.tree import load_lock_file, lock_local_xla
    from xlatools.fsutil import cache_root
    from xlatools.profiles import load

    resolved = load(request.profile)
    lock = load_lock_file(request.lock) if request.lock else None
    options = BuildOptions(
        source=request.source,
        out_root=request.out_root,
        dist_dir=Path(resolved.profile.build.output_dir),
        cache_root=cache_root(),
        run_id=secrets.token_hex(4),
        uid=os.getuid(),
        gid=os.getgid(),
        user_name=_user_name(),
        local=request.local,
        jobs=request.jobs,
        local_xla=lock_local_xla(lock) if lock else None,  # else the profile's source.xla.local_path
    )
    plan = plan_build(resolved, options)
    check_source(plan, uses_buildpy=resolved.profile.build.command is None)
    for note in plan.notes:
        reporter.warn(note)
    if request.lock is None and (Path.cwd() / "xlatools.lock").is_file():
        reporter.warn("./xlatools.lock exists but is not used; pass --lock xlatools.lock to build with its pin")
    return PreparedBuild(plan, lock, request)


def preview_tree(prepared: PreparedBuild) -> TreePreview:
    from xlatools.bazelrc import write_tree_block
    from xlatools.builder.tree import apply_pin

    plan = prepared.plan
    block = write_tree_block(Path(plan.source), plan.config_name, plan.bazelrc, dry_run=True)
    pin_changed, pin_diff = apply_pin(prepared.lock, Path(plan.source), dry_run=True) if prepared.lock else ((), "")
    return TreePreview(bazelrc=block.action, pin_changed=list(pin_changed), pin_diff=pin_diff)


def run_build(
    prepared: PreparedBuild, reporter: Reporter, explain: Explain | None = None, argv: Sequence[str] = ()
) -> BuildOutcome:
    """Connect to the engine, pin the tree, write its bazel config, run the build into a bundle.

    Failures of the build itself come back in the outcome (with the manifest); bad input
    and a missing engine raise before anything is written."""
    from xlatools.bazelrc import not_imported_warning, write_tree_block
    from xlatools.builder.execute import execute
    from xlatools.builder.tree import apply_pin, lock_summary
    from xlatools.remote.credentials import resolve_credentials

    plan, request = prepared.plan, prepared.request
    credentials = resolve_credentials(plan.credentials, plan.remote_cache)  # a missing secret: exit 3, nothing written
    for note in credentials.warnings:
        reporter.warn(note)
    client = None
    if plan.mode == "container":
        from xlatools.builder.engine import connect

        from xlatools.builder.engine import check_base_image

        client = connect()  # exit 3 before anything is written
        check_base_image(client, plan.image, request.rebuild_image)  # likewise: a base image that is not there
    pin_changed: tuple[str, ...] = ()
    if prepared.lock is not None:  # first: a tree that cannot be pinned is refused before anything else changes
        pin_changed, _ = apply_pin(prepared.lock, Path(plan.source), dry_run=False)
        reporter.step(f"pin from {request.lock}: {', '.join(pin_changed) or 'tree already agrees with the lock'}")
    block = write_tree_block(Path(plan.source), plan.config_name, plan.bazelrc, dry_run=False)
    reporter.step(f"{block.path}: config '{plan.config_name}' {block.action}")
    if not block.imported:
        reporter.warn(not_imported_warning(Path(plan.source), plan.config_name))
    if plan.credentials is not None:  # where they come from, never their values
        reporter.step(
            f"remote credentials ({'; '.join(plan.credentials.describe())}) for bazel in {plan.private_rc}, "
            "removed when the build ends"
        )
    reporter.step("$ " + " ".join(plan.argv))
    return execute(
        plan,
        out_root=request.out_root,
        tree=TreeInfo(bazelrc=block.action, pin_changed=list(pin_changed)),
        pin=lock_summary(prepared.lock, request.lock),
        reporter=reporter,
        argv=argv,
        keep_container=request.keep_container,
        rebuild_image=request.rebuild_image,
        client=client,
        explain=explain,
        credentials=credentials,
    )


def _user_name() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "xlatools"
