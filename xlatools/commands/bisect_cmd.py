"""`xlatools bisect releases|commits|passes`: find where a regression came from."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.options import (
    AccountOption,
    DryRunOption,
    ExecutorOption,
    JsonOption,
    PartitionOption,
    PlatformOption,
    ProfileOption,
    PythonOption,
    QuietOption,
    SbatchOption,
    TimeLimitOption,
    TimeoutOption,
    XlaFlagOption,
    executor_choice,
)

app = typer.Typer(
    help="Find the first bad jax release, XLA/JAX commit or HLO pass (resumable; see docs/bisect.md).",
    no_args_is_help=True,
)

# The test options, shared by the three commands.
PROGRAM = typer.Argument(None, help="The test program (after --): exit 0 = good, else bad (see --bad-exit, --match).")
ARGS = typer.Argument(None, help="Arguments for the program.")
MODULE = typer.Option(None, "-m", help="Run a module (python -m MODULE) as the test.")
REPLAY = typer.Option(
    None,
    "--replay",
    help="A repro pack (made by `xlatools repro pack`; one that records a failure): reproduced = bad, not reproduced = good.",
)
BAD_EXIT = typer.Option(
    [], "--bad-exit", help="Only these exit codes mean bad (repeatable); other non-zero codes are skip."
)
SKIP_EXIT = typer.Option(
    [125], "--skip-exit", help="Exit codes that mean 'cannot test' (default 125, as git bisect run)."
)
MATCH = typer.Option(None, "--match", help="Bad when this regex is found (in the output, or see --match-in).")
MATCH_IN = typer.Option(
    "output",
    "--match-in",
    help="Where --match looks: output, or dump:PART (dump files whose name holds PART, e.g. dump:after_optimizations).",
)
METRIC = typer.Option(None, "--metric", help="Read NAME from the JSON the program writes to $XLATOOLS_METRICS_FILE.")
THRESHOLD = typer.Option(
    None, "--threshold", help="With --metric: bad when the value is above it (below with --higher-is-better)."
)
HIGHER = typer.Option(False, "--higher-is-better", help="With --metric: lower values are the regression.")
PRESET = typer.Option([], "--preset", help="A run preset for every step (repeatable).")
ENV = typer.Option([], "--env", help="K=V for the program (repeatable).")
# Not the bundles' --out: a bisection's folder under it is found again when the same command runs again.
OUT = typer.Option(
    Path("artifacts/bisect"), "--out", help="Root of bisect folders (one per bisection, found again on re-run)."
)
CONFIRM = typer.Option(
    0, "--confirm", min=0, max=100, help="Re-run the two boundary steps N more times; disagreement is reported."
)
FRESH = typer.Option(False, "--fresh", help="Start over: move the recorded bisection aside (kept as <folder>.<time>).")


# (name, annotation, default) of the test options, appended to each command's own parameters.
_TEST_OPTIONS = [
    ("program", Optional[str], PROGRAM),
    ("args", Optional[List[str]], ARGS),
    ("module", Optional[str], MODULE),
    ("replay", Optional[Path], REPLAY),
    ("bad_exit", List[int], BAD_EXIT),
    ("skip_exit", List[int], SKIP_EXIT),
    ("match", Optional[str], MATCH),
    ("match_in", str, MATCH_IN),
    ("metric", Optional[str], METRIC),
    ("threshold", Optional[float], THRESHOLD),
    ("higher_is_better", bool, HIGHER),
    ("preset", List[str], PRESET),
    ("xla_flag", XlaFlagOption, []),
    ("env", List[str], ENV),
    ("timeout", TimeoutOption, None),
    ("platform", PlatformOption, None),
    ("quiet", QuietOption, None),
    ("executor", ExecutorOption, None),
    ("partition", PartitionOption, None),
    ("account", AccountOption, None),
    ("time_limit", TimeLimitOption, None),
    ("sbatch_option", SbatchOption, []),
]
CLUSTER_PROFILE = typer.Option(
    None,
    "--profile",
    "-p",
    help="A profile whose cluster: section says where steps run "
    "(--executor and the sbatch settings; see docs/cluster.md).",
)


def with_test_options(command):
    """Give `command(test=TestOptions, reporter=Reporter, ...)` the shared test options (and --quiet) as CLI
    parameters (typer reads the signature), so the three commands declare them once."""
    import functools
    import inspect
    import typing

    hints = typing.get_type_hints(command, include_extras=True)  # the shared options are Annotated types
    own = [
        p.replace(annotation=hints[p.name])
        for p in inspect.signature(command).parameters.values()
        if p.name not in ("test", "reporter")
    ]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        for name, kind, default in _TEST_OPTIONS
    ]

    @functools.wraps(command)
    def wrapper(**values):
        from xlatools.bisect.checks import TestOptions
        from xlatools.bisect.rule import Rule
        from xlatools.console import Reporter

        v = {name: values.pop(name) for name, _, _ in _TEST_OPTIONS}
        rule = Rule(
            bad_exit=tuple(v["bad_exit"]),
            skip_exit=tuple(v["skip_exit"]),
            match=v["match"],
            match_in=v["match_in"],
            metric=v["metric"],
            threshold=v["threshold"],
            higher_is_better=v["higher_is_better"],
        )
        test = TestOptions(
            program=v["program"],
            args=tuple(v["args"] or ()),
            module=v["module"],
            replay=v["replay"],
            rule=rule,
            presets=tuple(v["preset"]),
            xla_flags=tuple(v["xla_flag"]),
            env=tuple(v["env"]),
            platform=v["platform"],
            timeout=v["timeout"],
            cwd=Path.cwd(),
            cluster=_cluster(
                executor_choice(v["executor"], v["partition"], v["account"], v["time_limit"], v["sbatch_option"]),
                values.get("profile"),
                values.get("dry_run", False),
            ),
        )
        return command(test=test, reporter=Reporter(quiet=bool(v["quiet"])), **values)

    wrapper.__signature__ = inspect.Signature([*(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own), *shared])
    wrapper.__annotations__ = {**{p.name: p.annotation for p in own}, **{n: k for n, k, _ in _TEST_OPTIONS}}
    return wrapper


def _cluster(choice, profile: str | None, dry_run: bool):
    """--executor and the profile's cluster: section; with slurm, Slurm checks the settings first (sbatch --test-only)."""
    from xlatools.cluster.spec import resolve

    cluster = resolve(choice, profile)
    if cluster is not None and not dry_run:
        from xlatools.cluster.slurm import preflight

        preflight(cluster, 1)
    return cluster


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
    )
    if dry_run:
        return _print_plan(plan_releases(request, reporter), as_json, test.cluster)
    _finish(bisect_releases(request, reporter), as_json)


def _print_plan(plan, as_json: bool, cluster=None) -> None:
    import json

    from xlatools.records import to_json

    if as_json:
        typer.echo(json.dumps(to_json(plan), indent=2))
        return
    for row in plan.candidates:
        extra = (
            f"  {' '.join(row.requirements)}{'  (cached)' if row.cached else ''}"
            if row.requirements is not None
            else ""
        )
        typer.echo(f"{row.label}{extra}")
    for version in plan.excluded:
        typer.echo(f"(jax {version}: no jaxlib of that version for this Python; not a candidate)")
    test = getattr(plan.test, "program", None) or getattr(plan.test, "pack", None)
    typer.echo(f"{len(plan.candidates)} candidates; at most {plan.ideal_steps} steps without skips; test: {test}")
    if cluster is not None:
        from xlatools.cluster.plan import JOB_FOLDER, plan_job

        job = plan_job(
            cluster, "stepNN-<candidate>", f"<step bundle>/{JOB_FOLDER}", 1, "<step python>", str(Path.cwd())
        )
        typer.echo(f"each step a Slurm job ({cluster.describe()}; from {cluster.source}):")
        typer.echo("\n".join(job.lines()))


def _finish(state, as_json: bool) -> None:
    import json

    from xlatools.bisect.driver import render, summary
    from xlatools.console import append_job_summary
    from xlatools.errors import EXIT_FAILED, EXIT_OK
    from xlatools.records import to_json

    text = render(state)
    append_job_summary(f"### xlatools bisect\n\n```\n{text.rstrip()}\n```\n")
    if as_json:
        typer.echo(
            json.dumps({**to_json(state), "folder": str(state.folder), "summary": to_json(summary(state))}, indent=2)
        )
    else:
        typer.echo(text)
    # An answer whose boundary steps disagreed under --confirm is not one to act on.
    raise typer.Exit(EXIT_FAILED if state.result is not None and state.result.flaky else EXIT_OK)


@app.command("passes")
@with_test_options
def passes(
    python: PythonOption = None,
    module_filter: Optional[str] = typer.Option(
        None, "--module", help="Take candidate passes from this HLO module only (name or id)."
    ),
    profile: Optional[str] = CLUSTER_PROFILE,
    test=None,
    reporter=None,
    out: Path = OUT,
    confirm: int = CONFIRM,
    fresh: bool = FRESH,
    as_json: JsonOption = False,
) -> None:
    """Find the smallest set of HLO passes whose disabling (--xla_disable_hlo_passes) turns the test good.

    --json: the state and summary."""
    from xlatools.bisect.api import PassRequest, bisect_passes

    request = PassRequest(test=test, python=python, module=module_filter, out=out, confirm=confirm, fresh=fresh)
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
