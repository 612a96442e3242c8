"""The test options every bisect command (and triage) shares, declared once: the program and how a run
becomes good, bad or skip, the run settings of each step, where steps run (--executor), and the bisect
folder options."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from xlatools.commands.options import (
    AccountOption,
    ExecutorOption,
    PartitionOption,
    PlatformOption,
    QuietOption,
    SbatchOption,
    TimeLimitOption,
    TimeoutOption,
    XlaFlagOption,
    executor_choice,
)

# The test options, shared by every bisect command and triage.
PROGRAM = typer.Argument(None, help="The test program (after --): exit 0 = good, else bad (see --bad-exit, --match).")
ARGS = typer.Argument(None, help="Arguments for the program.")
MODULE = typer.Option(None, "-m", help="Run a Python module (python -m MODULE) as the test.")
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
METRIC = typer.Option(
    None,
    "--metric",
    help="xlatools' own measure (compile_s, run_s, temp_bytes, peak_rss_mb, ...; NAME:MODULE for one module; "
    "docs/metrics.md), or NAME from the JSON the program writes to $XLATOOLS_METRICS_FILE. Without --threshold: "
    "judged against the two ends, measured first with their noise (docs/bisect.md).",
)
THRESHOLD = typer.Option(
    None, "--threshold", help="With --metric: bad when the value is above it (below with --higher-is-better)."
)
HIGHER = typer.Option(False, "--higher-is-better", help="With --metric: lower values are the regression.")
REPEAT = typer.Option(
    None,
    "--repeat",
    help="--metric without --threshold: runs of each end, interleaved (default 5; 3 for an exact metric).",
)
MAX_RUNS = typer.Option(
    None,
    "--max-runs",
    help="--metric without --threshold: runs of one step while it is ambiguous (default 7), then skip.",
)
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
    ("repeat", Optional[int], REPEAT),
    ("max_runs", Optional[int], MAX_RUNS),
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
            repeat=v["repeat"],
            max_runs=v["max_runs"],
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


WITH = typer.Option(
    [],
    "--with",
    help="A package the program needs in every release environment (repeatable; pip's syntax, e.g. flax or "
    "optax==0.2.8): the newest version that accepts each jax release unless pinned.",
)
REQUIREMENTS = typer.Option(
    [], "--requirements", help="A requirements file of such packages (repeatable; requirement lines only)."
)


def program_requirements(with_: list[str], files: list[Path]) -> tuple[str, ...]:
    """--with and --requirements, checked (bad input is exit 2 before anything runs)."""
    from xlatools.bisect.extras import program_requirements as checked

    return checked(with_, files)


GOOD_PYTHON = typer.Option(
    None,
    "--good-python",
    help="With --metric (no --threshold): the same program on this interpreter (a good release) is the good anchor; "
    "without it, good means at least 10% better than the program as it is, beyond noise.",
)
