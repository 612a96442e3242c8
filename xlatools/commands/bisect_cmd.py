"""`xlatools bisect releases|commits|passes`: find where a regression came from."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.bisect_more_cmd import flags, timeline
from xlatools.commands.bisect_options import (
    CLUSTER_PROFILE,
    CONFIRM,
    FRESH,
    GOOD_PYTHON,
    OUT,
    REQUIREMENTS,
    WITH,
    program_requirements,
    with_test_options,
)
from xlatools.commands.options import DryRunOption, JsonOption, ProfileOption, PythonOption
from xlatools.commands.bisect_output import finish as _finish
from xlatools.commands.bisect_output import print_pass_plan as _print_pass_plan
from xlatools.commands.bisect_output import print_plan as _print_plan

app = typer.Typer(
    help="Find the first bad jax release, XLA/JAX commit or HLO pass; measure every release; find the switch that recovers (resumable; see docs/bisect.md).",
    no_args_is_help=True,
)


@app.command("releases")
@with_test_options
def releases(
    good: str = typer.Option(..., "--good", help="A jax release where the test passes."),
    bad: str = typer.Option(..., "--bad", help="A later jax release where it fails."),
    python_version: str = typer.Option("3.11", "--python-version", help="Python of the step environments."),
    nightly: bool = typer.Option(False, "--nightly", help="Also nightly (pre-release) builds the index lists."),
    jobs: int = typer.Option(
        1,
        "--jobs",
        "-j",
        min=1,
        max=64,
        help="Test K candidates at once (K-ary search; installs in parallel; the same answer, any K continues a bisection).",
    ),
    profile: Optional[str] = CLUSTER_PROFILE,
    with_: List[str] = WITH,
    requirements: List[Path] = REQUIREMENTS,
    test=None,
    reporter=None,
    out: Path = OUT,
    confirm: int = CONFIRM,
    fresh: bool = FRESH,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Bisect jax releases: each candidate is installed (jax==X jaxlib==X) in a cached environment.

    --json: the state and summary (with --dry-run: the candidates and the test)."""
    from xlatools.bisect.api import ReleaseRequest, bisect_releases, plan_releases

    request = ReleaseRequest(
        good=good,
        bad=bad,
        test=test,
        python_version=python_version,
        nightly=nightly,
        out=out,
        confirm=confirm,
        fresh=fresh,
        jobs=jobs,
        requirements=program_requirements(with_, requirements),
    )
    if dry_run:
        return _print_plan(plan_releases(request, reporter), as_json, test.cluster)
    _finish(bisect_releases(request, reporter), as_json)


@app.command("passes")
@with_test_options
def passes(
    python: PythonOption = None,
    module_filter: Optional[str] = typer.Option(
        None,
        "--module",
        help="Take candidate passes from this HLO module only (name or id). Not -m, which names a Python module.",
    ),
    exclude_pass: List[str] = typer.Option(
        [], "--exclude-pass", help="Never disable this pass (repeatable); it stays enabled in every step."
    ),
    include_pass: List[str] = typer.Option(
        [],
        "--include-pass",
        help="Make this pass a candidate (repeatable): one the dump did not show, or one the backend needs "
        "(left enabled by default, e.g. copy-insertion).",
    ),
    good_python: Optional[str] = GOOD_PYTHON,
    profile: Optional[str] = CLUSTER_PROFILE,
    test=None,
    reporter=None,
    out: Path = OUT,
    confirm: int = CONFIRM,
    fresh: bool = FRESH,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Find the smallest set of HLO passes whose disabling (--xla_disable_hlo_passes) turns the test good.

    Passes the backend needs (copy-insertion) and --exclude-pass stay enabled; a step whose disabled passes
    crash the program is a skip, and the passes it needs stay enabled too.
    --json: the state and summary (with --dry-run: the candidates and the plan)."""
    from xlatools.bisect.api import PassRequest, bisect_passes, plan_passes

    request = PassRequest(
        test=test,
        python=python,
        module=module_filter,
        out=out,
        confirm=confirm,
        fresh=fresh,
        exclude=tuple(exclude_pass),
        include=tuple(include_pass),
        good_python=good_python,
    )
    if dry_run:
        return _print_pass_plan(plan_passes(request, reporter), as_json)
    _finish(bisect_passes(request, reporter), as_json)


@app.command("commits")
@with_test_options
def commits(
    profile: ProfileOption,  # required: the build profile of every step
    xla: Optional[str] = typer.Option(
        None, "--xla", help="GOOD..BAD XLA commits (from --xla-repo), built into jaxlib via a local pin."
    ),
    jax: Optional[str] = typer.Option(None, "--jax", help="GOOD..BAD JAX commits (from --source itself)."),
    xla_repo: Optional[Path] = typer.Option(
        None, "--xla-repo", help="The local XLA git checkout that holds the --xla commits."
    ),
    source: Path = typer.Option(Path("."), "--source", help="The JAX source tree to build."),
    local: bool = typer.Option(False, "--local", help="Build with bazel on this host instead of a container."),
    python: PythonOption = None,
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, max=100_000, help="bazel --jobs."),
    test=None,
    reporter=None,
    out: Path = OUT,
    confirm: int = CONFIRM,
    fresh: bool = FRESH,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Bisect XLA (--xla) or JAX (--jax) commits: each step pins, builds jaxlib and runs the test; build failures are skips.

    --profile builds each step; --python runs the test with the built jaxlib first on its path.
    --json: the state and summary (with --dry-run: the candidates and the test)."""
    from xlatools.bisect.api import CommitRequest, bisect_commits, plan_commits
    from xlatools.errors import UsageError

    if (xla is None) == (jax is None):
        raise UsageError("give exactly one of --xla GOOD..BAD or --jax GOOD..BAD")
    request = CommitRequest(
        commits=xla or jax,
        which="xla" if xla else "jax",
        source=source,
        profile=profile,
        test=test,
        repo=xla_repo,
        local=local,
        python=python,
        jobs=jobs,
        out=out,
        confirm=confirm,
        fresh=fresh,
    )
    if dry_run:
        return _print_plan(plan_commits(request, reporter), as_json, test.cluster)
    _finish(bisect_commits(request, reporter), as_json)


app.command("timeline")(timeline)
app.command("flags")(flags)
