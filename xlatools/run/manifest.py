"""What a run leaves behind, as data: the typed manifest, the summary text, and what the logs
say about the run's own switches (vmodule patterns that matched nothing)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from xlatools.records.run import (
    DumpSummary,
    FrontendInfo,
    Interpreter,
    InterpreterFacts,
    RunManifest,
    SmokeReport,
    SmokeResult,
)
from xlatools.run.plan import RunPlan
from xlatools.run.process import ProgramResult
from xlatools.run.target import ProbedInterpreter

if TYPE_CHECKING:
    from xlatools.run.dumps import DumpIndex

Manifest = TypeVar("Manifest", bound=RunManifest)  # a run's manifest, or one that extends it (a debug session's)

# absl / TF log lines: `I1123 03:07:28.491441   26219 hlo_pass_pipeline.cc:93] ...`
_LOG_SOURCE = re.compile(rb"^[IWEF]\d{4} [\d:.]+\s+\d+ (?P<file>[\w.\-]+)\.(?:cc|h|cpp|c):\d+\]")


def run_record(
    plan: RunPlan,
    target: ProbedInterpreter,
    argv: list[str],
    flag_checks: dict[str, str],
    kind: type[Manifest] = RunManifest,
) -> Manifest:
    """The manifest of a run that is starting (status "running"); finish_record() completes it."""
    from xlatools.records.base import invoked

    record = kind(
        program=plan.program.record(),
        program_argv=list(plan.argv),
        cwd=plan.cwd,
        interpreter=Interpreter(python=target.python, python_version=target.python_version),
        jax=target.facts(with_python_version=False),  # the version is the interpreter's, above
        frontend=FrontendInfo(
            name=target.frontend,
            version=target.frontend_version,
            xla_source=target.xla_source,
            versions=dict(target.versions),
            tf_xla_flags=list(plan.tf_xla_flags),
        ),
        platform=plan.platform,
        profile=plan.profile,
        presets=[preset.ref() for preset in plan.presets],
        xla_flags=list(plan.xla_flags),
        xla_flag_sources=dict(plan.xla_flag_sources),
        overridden_flags=[override.record() for override in plan.overridden_flags],
        env_changes=[change.record() for change in plan.env_changes],
        timeout=plan.timeout,
        notes=list(plan.notes),
        flag_checks=dict(flag_checks),
    )
    return invoked(record, argv)


# Variables that change a program's numbers (types, precisions, math libraries): recorded with every run.
NUMERICS_ENV = (
    "JAX_ENABLE_X64",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "JAX_DEFAULT_DTYPE_BITS",
    "JAX_NUMPY_DTYPE_PROMOTION",
    "NVIDIA_TF32_OVERRIDE",
    "TF_ENABLE_ONEDNN_OPTS",
    "XLA_FLAGS_FILE",
)


def numerics_env(env: dict[str, str]) -> dict[str, str]:
    """The NUMERICS_ENV variables set (non-empty) in `env`."""
    return {name: env[name] for name in NUMERICS_ENV if env.get(name) not in (None, "")}


def finish_record(record: RunManifest, result: ProgramResult, exit_code: int) -> None:
    """The fields of a finished program: xlatools' exit code and the program's own outcome."""
    record.exit_code, record.returncode, record.signal = exit_code, result.returncode, result.signal_name
    record.program_outcome, record.error = result.describe(), result.error
    record.started, record.finished, record.duration_s = result.started, result.finished, result.duration


def dump_summary(index: DumpIndex) -> DumpSummary:
    """The manifest's view of a run's dump: totals and one row per module, without file lists
    (the manifest's `files` index has them, with sizes and hashes)."""
    totals = index.totals()
    return DumpSummary(
        dir="xla_dump",
        layout=index.layout,
        files=totals["files"],
        bytes=totals["bytes"],
        modules=[m.summary() for m in index.sorted_modules()],
    )


def reconcile_devices(jax: InterpreterFacts | None, smoke: SmokeReport | None) -> None:
    """The CPU devices the smoke programs ran on, in the manifest: the target was probed without the run's
    XLA_FLAGS, so a forced host device count (`--xla_force_host_platform_device_count=4` of the collectives
    program) showed there as one device while the programs saw four."""
    if jax is None or smoke is None or not jax.devices or jax.devices[0].platform != "cpu":
        return
    counts = {r.devices for r in smoke.results if r.backend == jax.backend and r.devices}
    if len(counts) == 1 and (count := counts.pop()) != len(jax.devices):
        first = jax.devices[0]
        jax.devices = [type(first)(id=i, platform=first.platform, kind=first.kind) for i in range(count)]


def read_smoke_results(path: Path) -> SmokeReport | None:
    """The smoke programs' own report (smoke/main.py writes it), None when there is none."""
    import json

    try:
        data = json.loads(path.read_text())
        return SmokeReport(jax=data.get("jax"), results=[SmokeResult(**r) for r in data.get("results", [])])
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def unmatched_vmodule(stderr_log: Path, patterns: list[str]) -> list[str]:
    """The vmodule patterns (file-name globs, as TF_CPP_VMODULE reads them) that no log line came from."""
    if not patterns:
        return []
    seen: set[str] = set()
    try:
        with open(stderr_log, "rb") as handle:
            for line in handle:
                found = _LOG_SOURCE.match(line)
                if found:
                    seen.add(found["file"].decode(errors="replace"))
    except OSError:
        return []
    return [p for p in patterns if not any(fnmatch.fnmatchcase(name, p) for name in seen)]


# Program deaths a dump flag causes, known from real runs: (flag, log text, what to say).
FLAG_FAULTS = (
    (
        "--xla_dump_hlo_snapshots",
        b"called on deleted or donated buffer",
        "the program died in --xla_dump_hlo_snapshots: jaxlib 0.4.x reads an execution's arguments for its snapshot after "
        "the run, when donated buffers (donate_argnums; Keras and many optax training steps donate) are gone. Dump without "
        "snapshots (--preset dump:passes --preset dump:proto instead of dump:full) or use jaxlib >= 0.5",
    ),
)


def flag_fault_notes(stderr_log: Path, flags: list[str]) -> list[str]:
    """What a failed program's log says about a dump flag that killed it (FLAG_FAULTS)."""
    wanted = [(text, note) for flag, text, note in FLAG_FAULTS if any(f.split("=")[0] == flag for f in flags)]
    if not wanted:
        return []
    from xlatools.fsutil import tail_bytes

    tail = tail_bytes(stderr_log, 1 << 20)
    return [note for text, note in wanted if text in tail]


def summary_text(record: RunManifest, modules_table: str) -> str:
    frontend = record.frontend
    carrier = (
        f"jax {record.jax.jax} / jaxlib {record.jax.jaxlib}"
        if frontend.name == "jax"
        else f"{frontend.name} {frontend.version} ({frontend.xla_source})"
    )
    lines = [
        f"status: {record.status} (xlatools exit {record.exit_code}; program {record.program_outcome})",
        f"program: {record.program.label if record.program else '-'}",
        f"{carrier} on {record.jax.backend} ({record.interpreter.python})",
        f"presets: {', '.join(p.kind + ':' + p.name for p in record.presets) or '-'}",
        f"XLA_FLAGS: {' '.join(record.xla_flags) or '-'}",
        *([f"TF_XLA_FLAGS: {' '.join(frontend.tf_xla_flags)}"] if frontend.tf_xla_flags else []),
        f"duration: {record.duration_s} s",
    ]
    lines += [
        f"process {p.id}: {p.status} ({p.outcome}){' - failed first' if p.first_failure else ''}; logs {p.stdout}, "
        f"{p.stderr}"
        for p in record.processes or []
    ]
    lines += [f"note: {note}" for note in record.notes]
    lines += [f"warning: {warning}" for warning in record.warnings or []]
    if record.metrics is not None:
        from xlatools.run.metrics_view import process_lines

        lines += [line.strip() for line in process_lines(record.metrics)]
    if modules_table:
        lines += ["", modules_table]
    return "\n".join(lines) + "\n"
