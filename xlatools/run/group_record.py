"""The bundle side of a multi-process run: its coordinator address, per-process folders, and the
manifest's `processes` list (each process's status, exit, signal, logs, dump and smoke report)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.records.run import Device, ProcessRecord, RunManifest
from xlatools.run.group import GroupResult

if TYPE_CHECKING:
    from xlatools.run.plan import RunPlan


def bind_coordinator(plan: RunPlan, cluster=None) -> tuple[RunPlan, str]:
    """The (bundle-bound) plan with a free 127.0.0.1 port for jax's coordinator, and that address; as a Slurm
    job (`cluster`, a cluster.spec.ClusterSpec), jax finds its coordinator from Slurm's variables instead."""
    if cluster is not None:
        from xlatools.run.slurm_launch import slurm_coordinator

        return slurm_coordinator(plan, cluster)
    from xlatools.run.multiprocess import free_port

    address = f"127.0.0.1:{free_port()}"
    return replace(plan, processes=[p.bind(coordinator=address) for p in plan.processes]), address


def make_process_folders(plan: RunPlan, bundle: Path) -> None:
    """Each process's dump folder and the folders its bundle paths point into (XLA makes only the last level)."""
    for process in plan.processes:
        if process.dump_dir:
            Path(process.dump_dir).mkdir(parents=True, exist_ok=True)
        for value in process.env.values():
            if value.startswith(str(bundle) + "/"):
                Path(value).parent.mkdir(parents=True, exist_ok=True)


def record_group(record: RunManifest, plan: RunPlan, group: GroupResult, bundle: Path) -> str:
    """Fill the manifest's processes (dump and smoke of process 0 also in the run's own fields);
    returns process 0's module table."""
    from xlatools.run.dumps import index_dump, modules_table
    from xlatools.run.flags import join_flags
    from xlatools.run.manifest import dump_summary, read_smoke_results

    table = ""
    rows = []
    for process, result in zip(plan.processes, group.processes):
        dump = None
        if process.dump_dir and Path(process.dump_dir).is_dir():
            index = index_dump(Path(process.dump_dir))
            dump = replace(dump_summary(index), dir=f"xla_dump/p{process.id}")
            if process.id == 0 and index.modules:
                table = modules_table(index)
        words = result.describe()
        rows.append(
            ProcessRecord(
                id=process.id,
                status=result.status,
                devices=process.devices,
                returncode=result.returncode,
                signal=result.signal_name,
                outcome=words,
                first_failure=result.first_failure,
                duration_s=result.duration,
                stdout=Path(process.stdout).name,
                stderr=Path(process.stderr).name,
                dump=dump,
                env={
                    **process.env,
                    **({"XLA_FLAGS": join_flags(process.xla_flags)} if process.xla_flags is not None else {}),
                },
                smoke=read_smoke_results(bundle / f"p{process.id}.smoke_results.json"),
                gpus=given_gpus(record, process.env),
                last_lines=list(result.last_lines),
            )
        )
    record.processes, record.first_failed = rows, group.first_failed
    record.dump, record.smoke = rows[0].dump, rows[0].smoke
    record.program_outcome = group.outcome()
    return table


def given_gpus(record: RunManifest, env: dict[str, str]) -> list[Device]:
    """The GPUs (as the target's jax reports them) whose ids a process got in JAX_LOCAL_DEVICE_IDS; [] on the CPU."""
    if record.platform == "cpu" or record.jax is None:
        return []
    ids = {int(i) for i in env.get("JAX_LOCAL_DEVICE_IDS", "").split(",") if i.strip().isdigit()}
    return [d for d in record.jax.devices if d.platform not in ("cpu", None) and d.id in ids]


def failing_log(record: RunManifest) -> str:
    """The stderr log to show for a failed run: the first failed process's, else process 0's."""
    if not record.processes:
        return "stderr.log"
    chosen = next((p for p in record.processes if p.first_failure), record.processes[0])
    return chosen.stderr
