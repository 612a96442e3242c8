"""`xlatools doctor` (what is wrong with this environment) and `xlatools explain LOG`
(known failure signatures in a build log)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from xlatools.commands.options import (
    AccountOption,
    ExecutorOption,
    JsonOption,
    PartitionOption,
    ProfileOption,
    PythonOption,
    TimeLimitOption,
    executor_choice,
)


def doctor(
    python: PythonOption = None,
    profile: ProfileOption = None,
    source: Optional[Path] = typer.Option(
        None, "--source", help="Also check this JAX source tree (bazel, .bazelrc, lock)."
    ),
    as_json: JsonOption = False,
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too (exit 1)."),
    executor: ExecutorOption = None,
    partition: PartitionOption = None,
    account: AccountOption = None,
    time_limit: TimeLimitOption = None,
) -> int:
    """Check the target interpreter, the environment, native libraries and (with --profile/--source)
    the build side; each check says ok/warn/fail, its evidence and the fix.

    --executor slurm (or a profile's cluster: section): also the cluster: the Slurm client, the controller,
    the partition/account/time, and a 1-second job (how long it queued).
    The target interpreter: --python, default this one. Exit 0 when nothing failed, 1 on a failure (or a warning with --strict), 2 bad input, 3 no usable interpreter."""
    import json

    from xlatools.doctor.model import DoctorOptions
    from xlatools.doctor.render import report_lines
    from xlatools.doctor.runner import plan_doctor, run_doctor
    from xlatools.records.base import to_json
    from xlatools.run.target import resolve_python

    from xlatools.cluster.spec import resolve

    cluster = resolve(executor_choice(executor, partition, account, time_limit, ()), profile)
    options = DoctorOptions(python=python, profile=profile, source=source, strict=strict)
    report = run_doctor(plan_doctor(options, resolve_python(python)))
    if cluster is not None:
        from xlatools.doctor.checks_cluster import cluster_checks

        report.checks += cluster_checks(cluster)
    if as_json:
        typer.echo(json.dumps(to_json(report.result()), indent=2))
    else:
        typer.echo("\n".join(report_lines(report)))
    return report.exit_code


def explain(
    log: Path = typer.Argument(..., help="A build log (e.g. a build bundle's build.log), or a bundle directory."),
    as_json: JsonOption = False,
) -> int:
    """Scan a log for known failure signatures and say what each means and how to fix it.

    Exit 0 when none matched, 1 when at least one did, 2 when the log cannot be read."""
    import json

    from xlatools.doctor.render import hint_lines
    from xlatools.doctor.signatures import scan_log
    from xlatools.errors import UsageError
    from xlatools.records.base import to_json

    path = log / "build.log" if log.is_dir() else log
    if not path.is_file():
        raise UsageError(f"{log}: no such log file", hint="give a build.log or a build bundle directory")
    hints = scan_log(path)
    if as_json:
        typer.echo(json.dumps({"log": str(path), "hints": to_json(hints)}, indent=2))
    else:
        typer.echo("\n".join(hint_lines(hints, str(path))))
    return 1 if hints else 0
