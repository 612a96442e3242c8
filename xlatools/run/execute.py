"""`xlatools run`, end to end: inputs -> checked RunPlan -> bundle -> outcome.

prepare() resolves everything and checks every flag against the target BEFORE the bundle exists, so bad input
leaves no half-made bundle (it writes only the target probe's cache). execute_plan() runs the plan inside the one
bundle lifecycle (bundle.bundle_session): the program starts as soon as the bundle exists, then the dumps are
indexed and the final manifest and summary written.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlatools.errors import EXIT_FAILED, EnvironmentMissing, exit_code_for
from xlatools.records.run import ProfileRun, ProvenanceRow, RunManifest
from xlatools.run.plan import RunPlan, RunRequest, plan_run
from xlatools.run.process import ProgramResult
from xlatools.run.target import ProbedInterpreter
from xlatools.vocab import ExitCodeMode, Platform, Status

if TYPE_CHECKING:
    from xlatools.cluster.spec import ClusterSpec
    from xlatools.console import Reporter

HEARTBEAT_SECONDS = float(os.environ.get("XLATOOLS_HEARTBEAT_S", "15"))  # quiet runs: a line this often


@dataclass
class PreparedRun:
    plan: RunPlan
    target: ProbedInterpreter
    flag_checks: dict[str, str]


def profile_run(profile_ref: str | None) -> tuple[ProfileRun, dict[str, Any]]:
    """The profile's run section as plain data, plus its preset definitions (the YAML mapping
    `run.define_presets`, which the preset catalog validates)."""
    if not profile_ref:
        return ProfileRun(), {}
    from xlatools.profiles import load
    from xlatools.profiles.explain import explain_rows

    resolved = load(profile_ref)
    run = resolved.profile.run
    info = ProfileRun(
        name=resolved.profile.name,
        file=str(resolved.path),
        chain=list(resolved.chain),
        presets=list(run.presets),
        dump_preset=run.dump_preset,
        env=dict(run.env),
        xla_flags=list(run.xla_flags),
        platform=Platform(run.platform),
        python=run.python,
        timeout=run.timeout,
        frontend=run.frontend,
        resolved=resolved.profile.model_dump(mode="json"),
        provenance=[ProvenanceRow(key=k, value=v, origin=o) for k, v, o in explain_rows(resolved)],
    )
    return info, dict(run.define_presets)


def prepare(
    request: RunRequest,
    profile: ProfileRun,
    define_presets: dict[str, Any],  # run.define_presets: the profile's raw YAML mapping, validated by the catalog
    caller_env: dict[str, str],
    cwd: Path,
    reporter: Reporter | None = None,
) -> PreparedRun:
    """Settle the request against the profile, probe the target, plan, and check every flag.
    Writes nothing but the target probe's cache."""
    from dataclasses import replace

    from xlatools.run import target as targets
    from xlatools.run.frontend_checks import check_flags, probe_target
    from xlatools.run.plan import settle_request
    from xlatools.run.presets.catalog import Catalog

    catalog = Catalog.load(define_presets, f"profile {profile.name} (run.define_presets)")
    where = {row.key: row.origin for row in profile.provenance}  # a preset it names that is unknown: file:line [key]
    catalog.check_profile(profile.presets, profile.dump_preset if request.dump else None, where)
    request = settle_request(request, profile)
    request = replace(request, python=targets.resolve_python(request.python))
    platform = request.platform
    target = probe_target(request, profile, catalog, platform, reporter)
    if platform == Platform.GPU and not target.has_gpu:
        raise EnvironmentMissing(
            f"--platform gpu: {request.python} sees no GPU ({target.frontend} backend: {target.backend or 'none'})",
            hint="install a CUDA/ROCm jaxlib plugin there, or use --platform cpu / auto",
        )
    on_gpu = platform == Platform.GPU or (platform == Platform.AUTO and target.has_gpu)
    plan = plan_run(
        request,
        profile,
        catalog,
        caller_env,
        cwd,
        jaxlib=target.jaxlib,
        gpu_platform=target.gpu_platform(),
        frontend=target.frontend,
        on_gpu=on_gpu,
    )
    if on_gpu:
        from xlatools.run.multiprocess import check_gpu_fit

        check_gpu_fit(
            plan.processes,
            [d for d in target.devices if d.platform not in ("cpu", None)],
            request.python,
            plan.child_env(caller_env),
            caller_env,
        )
    return PreparedRun(plan, target, check_flags(target, plan, reporter))


def _copy_program(plan: RunPlan, bundle_path: Path) -> None:
    if not plan.copy_files:
        return
    target = bundle_path / "program"
    target.mkdir(exist_ok=True)
    for name in plan.copy_files:
        try:
            shutil.copy2(name, target / Path(name).name)
        except OSError:
            pass  # the program may have been removed meanwhile; the run says so itself


def program_exit_code(result: ProgramResult, mode: ExitCodeMode = ExitCodeMode.XLATOOLS) -> int:
    """xlatools' exit code: its own outcomes keep 0/3/124/130; any failure of the program is 1,
    unless `mode` is "program" (the program's own status, 128+N for signal N)."""
    if result.status != Status.FAILED:
        return exit_code_for(result.status)
    if mode == ExitCodeMode.PROGRAM and result.returncode is not None:
        return result.returncode if result.returncode >= 0 else 128 - result.returncode
    return EXIT_FAILED


@dataclass
class RunOutcome:
    record: RunManifest
    exit_code: int
    table: str  # the module table, empty when nothing was dumped


def execute_plan(
    prepared: PreparedRun,
    out_root: Path,
    argv: list[str],
    caller_env: dict[str, str],
    reporter: Reporter,
    archive: bool = False,
    echo_stdout_to_stderr: bool = False,
    exit_code_mode: ExitCodeMode = ExitCodeMode.XLATOOLS,
    cluster: ClusterSpec | None = None,
) -> RunOutcome:
    """Run the plan into a fresh bundle (with `cluster`, as a Slurm job: run/slurm_launch.py). The program
    starts as soon as the bundle exists; the program copy and the running manifest are written while it runs. A record we cannot write
    (disk full) stops the run: exit 3, with the manifest saying so when at all possible."""
    from xlatools.bundle import bundle_session
    from xlatools.run.manifest import finish_record, numerics_env, run_record

    # Absolute: the program may change directory, and the paths go into XLA_FLAGS and the manifest.
    with bundle_session(
        out_root, RunManifest(), name=prepared.plan.name, write_running=False, reporter=reporter
    ) as session:
        plan = prepared.plan.bind(session.path)
        record = run_record(plan, prepared.target, argv, prepared.flag_checks)
        record.numerics_env = numerics_env(plan.child_env(caller_env))  # replays and packs restore them
        session.adopt(record)
        if plan.processes:
            from xlatools.run.group_record import bind_coordinator, make_process_folders

            plan, session.record.coordinator = bind_coordinator(plan, cluster)
            make_process_folders(plan, session.path)
        _make_folders(plan, session.path)

        def on_start(_proc) -> None:
            _copy_program(plan, session.path)
            session.save()
            _load_the_end()

        reporter.step(
            f"{plan.program.label} -> {session.path}" + ("  (quiet: output in the bundle's logs)" if plan.quiet else "")
        )
        with reporter.group(f"{plan.program.label} output", announce=False):
            result, group = _launch(
                plan, prepared, session, cluster, caller_env, on_start, reporter, echo_stdout_to_stderr
            )
        if result.status == Status.ERROR and cluster is None:  # a log the output could not go to: the disk is full
            finish_record(session.record, result, EnvironmentMissing.exit_code)
            raise EnvironmentMissing(
                f"{result.error}; the program was stopped. Record: {session.path}",
                hint="free some space (or pick another --out) and run again",
            )
        table = _finish(plan, session, result, program_exit_code(result, exit_code_mode), group)
    record = session.record
    if archive:
        record.archive = str(session.bundle.archive())
    return RunOutcome(record, record.exit_code, table)


def _launch(
    plan: RunPlan,
    prepared: PreparedRun,
    session,
    cluster: ClusterSpec | None,
    caller_env: dict[str, str],
    on_start,
    reporter: Reporter,
    echo_stdout_to_stderr: bool,
):
    """Start the program (one process, a group of N, or a Slurm job) and wait for it: (result, group or None)."""
    echo_out, echo_err = (None, None) if plan.quiet else reporter.echo_streams()
    if echo_stdout_to_stderr:
        echo_out = echo_err
    heartbeat = HEARTBEAT_SECONDS if plan.quiet else None
    from xlatools.run.hang.capture import stuck_watch  # every process's stacks before a timeout stops it

    watch = stuck_watch(plan.timeout, plan.stall, session.path, reporter, session.record)
    if cluster is not None:
        from xlatools.run.slurm_launch import execute_in_session

        return execute_in_session(plan, session, cluster, caller_env, on_start, reporter, (echo_out, echo_err))
    if plan.processes:
        from xlatools.run.group import execute_group

        reporter.info(
            f"{len(plan.processes)} processes (coordinator {session.record.coordinator}); output of "
            "process 0 shown, every process's in pN.stdout.log / pN.stderr.log"
        )
        from xlatools.run.hooks import observing

        group = execute_group(
            plan.processes,
            observing(plan, plan.child_env(caller_env), session.path),
            plan.cwd,
            plan.timeout,
            echo_out,
            echo_err,
            on_start,
            heartbeat,
            reporter,
            watch=watch,
        )
        return group.run, group
    from xlatools.proctree import leaving_nothing
    from xlatools.run.hooks import program_env
    from xlatools.run.process import execute
    from xlatools.run.recorder import no_partial_files

    env = program_env(plan, prepared.target.backend, plan.child_env(caller_env), session.path)
    logs = (session.path / "stdout.log", session.path / "stderr.log")
    # what the program leaves running (a daemon in a session of its own), or half-written, ends with it
    with no_partial_files(session.path), leaving_nothing(env, on_start) as (env, started):
        result = execute(
            plan.argv,
            env,
            plan.cwd,
            *logs,
            plan.timeout,
            echo_out,
            echo_err,
            on_start=started,
            heartbeat=heartbeat,
            reporter=reporter,
            watch=watch,
        )
    return result, None


def _load_the_end() -> None:
    """Import what the end of the run needs (dump index, file hashing) while the program runs:
    on a machine with a spare core that time overlaps the program instead of following it."""
    import hashlib  # noqa: F401  (the file index)

    import xlatools.run.dumps  # noqa: F401


def _make_folders(plan: RunPlan, bundle_path: Path) -> None:
    if plan.dump_dir:
        Path(plan.dump_dir).mkdir(parents=True, exist_ok=True)
    for change in plan.env_changes:  # folders that presets point into, e.g. torch_xla/tensors.txt
        if change.value and change.value.startswith(str(bundle_path)) and change.name != "XLA_FLAGS":
            Path(change.value).parent.mkdir(parents=True, exist_ok=True)


def _finish(plan: RunPlan, session, result: ProgramResult, exit_code: int, group=None) -> str:
    """Index the dumps, check the log switches, write summary.txt and the final manifest; the module table."""
    from xlatools.fsutil import atomic_write_text
    from xlatools.redact import redact_text
    from xlatools.run.dumps import index_dump, modules_table
    from xlatools.run.child_crash import name_crashes
    from xlatools.run.manifest import (
        dump_summary,
        finish_record,
        flag_fault_notes,
        read_smoke_results,
        reconcile_devices,
        summary_text,
        unmatched_vmodule,
    )

    record: RunManifest = session.record
    table = ""
    if plan.dump_dir and Path(plan.dump_dir).is_dir() and group is None:
        index = index_dump(Path(plan.dump_dir))
        record.dump = dump_summary(index)
        table = modules_table(index) if index.modules else ""
        if result.status == Status.OK:
            from xlatools.run.dump_expect import SNAPSHOT_FLAG, missing_dump_kinds
            from xlatools.run.recorder import adopt

            recorded = adopt(session.path, Path(plan.dump_dir))
            record.notes += recorded.notes
            missing = missing_dump_kinds(plan.xla_flags, index)
            record.warnings = [w for w in missing if not (recorded.matched and w.startswith(SNAPSHOT_FLAG))] or None
    stderr_log = session.path / (plan.processes[0].stderr if plan.processes else "stderr.log")
    for pattern in unmatched_vmodule(stderr_log, plan.vmodule_patterns()):
        record.notes.append(
            f"vmodule pattern {pattern!r} matched no log line: patterns match source file names "
            "without the extension (e.g. hlo_pass_pipeline); check the name, or whether that file "
            "logs at that level"
        )
    if result.status != Status.OK:
        record.notes += flag_fault_notes(stderr_log, plan.xla_flags)
    finish_record(record, result, exit_code)
    from xlatools.run.hooks import observed

    record.metrics = observed(plan, session.path, one_process=group is None)
    name_crashes(record, session.path, stderr_log)  # native-backtrace.txt, or a child's death in the log
    record.smoke = read_smoke_results(session.path / "smoke_results.json")
    reconcile_devices(record.jax, record.smoke)
    if group is not None:  # a multi-process run (run/group_record.py)
        from xlatools.run.group_record import record_group

        table = record_group(record, plan, group, session.path)
    record.status = result.status
    atomic_write_text(session.path / "summary.txt", redact_text(summary_text(record, table)), durable=False)
    session.finish(result.status, exit_code=exit_code)
    return table
