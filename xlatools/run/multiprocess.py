"""Multi-process runs (`run --processes N`): N processes of the program form one jax distributed
job on this machine (pure planning; run/group.py runs it).

jax starts its coordinator service inside process 0 (`jax.distributed.initialize`); xlatools picks
a free 127.0.0.1 port for it when the bundle exists, and gives every process its part in its
environment (names as jax 0.4.30, 0.10.2 and 0.12 read them, checked in their sources):

  JAX_COORDINATOR_ADDRESS=127.0.0.1:PORT       read by jax.distributed.initialize() itself
  JAX_COORDINATOR_BIND_ADDRESS=127.0.0.1:PORT  read by it too: the service listens on loopback only
                                               (jax's default is every interface)
  JAX_NUM_PROCESSES=N, JAX_PROCESS_ID=I        NOT read by jax (it takes them as arguments, or from a
                                               cluster manager such as SLURM): the program passes them,
      jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                                 process_id=int(os.environ["JAX_PROCESS_ID"]))
  JAX_NUM_CPU_DEVICES=D                        read by jax >= 0.5 (jax_num_cpu_devices): CPU devices per process
  JAX_LOCAL_DEVICE_IDS=I*D,...,I*D+D-1         read by jax.distributed.initialize() (0.10, 0.12): the
                                               GPUs of process I (jax_cuda_visible_devices)

XLA names dump files without a process index, so every path into the bundle that the run's settings
give (the XLA dump, jax IR, the smoke report, ...) gets one per process: `{bundle}/xla_dump` ->
`{bundle}/xla_dump/p1`, `{bundle}/a/b.txt` -> `{bundle}/a/p1/b.txt`, a file at the top
`{bundle}/metrics.json` -> `{bundle}/p1.metrics.json`; logs are `p1.stdout.log` and `p1.stderr.log`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xlatools.errors import UsageError
from xlatools.run.flags import join_flags, split_flag

BUNDLE = "{bundle}"
COORDINATOR = "{coordinator}"
MULTIPROCESS_SMOKE = "multiprocess"
DEFAULT_SMOKE_PROCESSES = 2
PROCESS_VARS = (
    "JAX_COORDINATOR_ADDRESS",
    "JAX_COORDINATOR_BIND_ADDRESS",
    "JAX_NUM_PROCESSES",
    "JAX_PROCESS_ID",
    "JAX_NUM_CPU_DEVICES",
    "JAX_LOCAL_DEVICE_IDS",
)
_LOOPBACK = "127.0.0.1,localhost"
MAX_PROCESSES = 4096  # per run, anywhere
PROCESS_MEMORY = 256 << 20  # a jax process on the CPU after its first jit (measured: 261 MiB, jax 0.10.2)
MAX_DEVICES_PER_PROCESS = 1024


@dataclass(frozen=True)
class ProcessPlan:
    """One process of a multi-process run: what it gets on top of the run's own environment."""

    id: int
    devices: int  # its devices (CPU devices, or GPUs by index)
    argv: list[str]
    env: dict[str, str]  # its identity and its own folders in the bundle
    xla_flags: list[str] | None  # the run's XLA flags with its own dump folder; None: the run's XLA_FLAGS as they are
    stdout: str  # {bundle}/pI.stdout.log
    stderr: str
    dump_dir: str | None  # {bundle}/xla_dump/pI when the run dumps

    def child_env(self, run_env: dict[str, str]) -> dict[str, str]:
        """The process's environment: the run's (plan.child_env), then its own part."""
        env = {**run_env, **self.env}
        if self.xla_flags is not None:
            env["XLA_FLAGS"] = join_flags(self.xla_flags)  # joined after binding: a path with a space is quoted
        return env

    def bind(self, bundle: str | None = None, coordinator: str | None = None) -> "ProcessPlan":
        """`{bundle}` (once the bundle exists) and `{coordinator}` (once a port is chosen) replaced."""

        def sub(value: str) -> str:
            value = value.replace(BUNDLE, bundle) if bundle else value
            return value.replace(COORDINATOR, coordinator) if coordinator else value

        env = {name: sub(value) for name, value in self.env.items()}
        flags = [sub(f) for f in self.xla_flags] if self.xla_flags is not None else None
        return replace(
            self,
            argv=[sub(a) for a in self.argv],
            env=env,
            xla_flags=flags,
            stdout=sub(self.stdout),
            stderr=sub(self.stderr),
            dump_dir=sub(self.dump_dir) if self.dump_dir else None,
        )


def per_process_path(value: str, process: int) -> str:
    """A path into the bundle made this process's own (see the module docstring); others unchanged."""
    if not value.startswith(BUNDLE + "/"):
        return value
    top, _, rest = value[len(BUNDLE) + 1 :].partition("/")
    if rest:
        return f"{BUNDLE}/{top}/p{process}/{rest}"
    if "." in top:  # a file at the top of the bundle
        return f"{BUNDLE}/p{process}.{top}"
    return f"{BUNDLE}/{top}/p{process}"


def _per_process_flags(flags: list[str], process: int) -> list[str]:
    out = []
    for flag in flags:
        name, value = split_flag(flag)
        out.append(f"--{name}={per_process_path(value, process)}" if value is not None else flag)
    return out


def check_counts(processes: int | None, devices: int, limit: tuple[int, str]) -> None:
    """Refuse (bad input, before anything starts) more processes than `limit` allows ((count, why):
    process_limit's answer) or more devices a process than MAX_DEVICES_PER_PROCESS."""
    most, why = limit
    if processes is not None and processes > most:
        raise UsageError(
            f"--processes {processes}: more than {most}, the most a run takes here ({why})",
            hint=f"give --processes {most} or fewer",
        )
    if devices > MAX_DEVICES_PER_PROCESS:
        raise UsageError(
            f"--devices-per-process {devices}: more than {MAX_DEVICES_PER_PROCESS} (each device of a process is "
            "named in its environment, JAX_LOCAL_DEVICE_IDS; GPU machines hold 4-16 devices, CPU devices are threads)",
            hint=f"give --devices-per-process {MAX_DEVICES_PER_PROCESS} or fewer",
        )


def process_limit(local: bool) -> tuple[int, str]:
    """(the most processes a run may have, why): on this machine, as many as its memory holds at
    PROCESS_MEMORY each (at least 2, at most MAX_PROCESSES); on a cluster (Slurm), MAX_PROCESSES."""
    if not local:
        return MAX_PROCESSES, "xlatools keeps a log, a dump folder and an exit file per process"
    import os

    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return MAX_PROCESSES, "xlatools keeps a log, a dump folder and an exit file per process"
    most = max(2, min(MAX_PROCESSES, memory // PROCESS_MEMORY))
    return most, (
        f"this machine has {memory / (1 << 30):.1f} GiB of memory and each jax process takes about "
        f"{PROCESS_MEMORY >> 20} MiB before it computes anything"
    )


def settle_processes(asked: int | None, smoke_names: tuple[str, ...], frontend: str) -> int:
    """How many processes: as asked, else 2 for smoke:multiprocess, else 1; checked."""
    wants_group = MULTIPROCESS_SMOKE in smoke_names
    count = asked if asked is not None else (DEFAULT_SMOKE_PROCESSES if wants_group else 1)
    if count < 1:
        raise UsageError(f"--processes {count}: must be 1 or more")
    if wants_group and count < 2:
        raise UsageError(
            "smoke:multiprocess needs at least 2 processes",
            hint=f"leave --processes out (it runs {DEFAULT_SMOKE_PROCESSES}) or give --processes 2 or more",
        )
    if count > 1 and frontend != "jax":
        raise UsageError(
            f"--processes {count}: multi-process runs are for jax programs (this run's frontend: {frontend})",
            hint="run TensorFlow and PyTorch/XLA programs with their own launchers",
        )
    return count


LOCAL_COORDINATOR = (
    "coordinator 127.0.0.1:<free port> (jax.distributed.initialize reads JAX_COORDINATOR_ADDRESS; the program "
    "passes JAX_NUM_PROCESSES and JAX_PROCESS_ID)"
)  # a Slurm job's plan says SLURM_COORDINATOR instead (run/slurm_launch.py)
SLURM_COORDINATOR = "coordinator from Slurm's variables (jax.distributed.initialize finds it on the job's first node)"


def plan_processes(
    count: int,
    devices: int,
    argv: list[str],
    env_values: dict[str, str | None],
    xla_flags: list[str],
    caller_env: dict[str, str],
) -> tuple[list[ProcessPlan], list[str]]:
    """The N processes of a run, and notes for the run. `env_values`: the run's environment changes
    (name -> value, None = removed); `xla_flags`: its XLA flags, before joining."""
    if devices < 1:
        raise UsageError(f"--devices-per-process {devices}: must be 1 or more")
    notes = [f"{count} processes, {devices} device{'s' if devices != 1 else ''} each; {LOCAL_COORDINATOR}"]
    proxy = _proxy_bypass(caller_env, env_values)
    if proxy:
        notes.append(
            "proxy variables are set: 127.0.0.1 added to no_proxy/NO_PROXY (the coordinator's gRPC "
            "connections would otherwise go through the proxy and hang)"
        )
    plans = []
    for process in range(count):
        env = {
            name: per_process_path(value, process)
            for name, value in env_values.items()
            if value is not None and value.startswith(BUNDLE + "/")
        }
        own_flags = _per_process_flags(xla_flags, process)
        first = process * devices
        env.update(
            {
                "JAX_COORDINATOR_ADDRESS": COORDINATOR,
                "JAX_COORDINATOR_BIND_ADDRESS": COORDINATOR,
                "JAX_NUM_PROCESSES": str(count),
                "JAX_PROCESS_ID": str(process),
                "JAX_NUM_CPU_DEVICES": str(devices),
                "JAX_LOCAL_DEVICE_IDS": ",".join(str(d) for d in range(first, first + devices)),
                **proxy,
            }
        )
        dump = next(
            (per_process_path(v, process) for n, v in map(split_flag, xla_flags) if n == "xla_dump_to" and v), None
        )
        plans.append(
            ProcessPlan(
                id=process,
                devices=devices,
                argv=[per_process_path(a, process) for a in argv],
                env=env,
                xla_flags=own_flags if own_flags != xla_flags else None,
                stdout=f"{BUNDLE}/p{process}.stdout.log",
                stderr=f"{BUNDLE}/p{process}.stderr.log",
                dump_dir=dump,
            )
        )
    return plans, notes


def plan_group(
    asked: int | None,
    devices: int,
    program,
    frontend: str,
    argv: list[str],
    changes: list,
    xla_flags: list[str],
    caller_env: dict[str, str],
    notes: list[str],
) -> list[ProcessPlan]:
    """The processes of a run (empty for one process); plan.plan_run's part. `program`: run.program.Program,
    `changes`: its env.EnvChange list; notes for the run are appended to `notes`."""
    smoke = tuple(program.name.split(",")) if program.kind == "smoke" else ()
    count = settle_processes(asked, smoke, frontend)
    if count == 1:
        if devices != 1:
            raise UsageError("--devices-per-process goes with --processes N (N >= 2)")
        return []
    processes, more = plan_processes(count, devices, argv, {c.name: c.value for c in changes}, xla_flags, caller_env)
    notes += more
    return processes


def check_gpu_fit(
    processes: list[ProcessPlan], gpus: list, python: str, run_env: dict[str, str], caller_env: dict[str, str]
) -> None:
    """Refuse (bad input, before launch) a GPU run whose processes x devices per process exceed the GPUs
    the target sees: a process given a GPU id that does not exist cannot start its backend and hangs.
    `gpus`: the target's GPU devices (its probe ran with the caller's CUDA_VISIBLE_DEVICES); the run's
    own CUDA_VISIBLE_DEVICES, when it sets one, narrows them."""
    if not processes:
        return
    seen, where = len(gpus), f"{python} sees"
    visible = run_env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible != caller_env.get("CUDA_VISIBLE_DEVICES"):
        seen, where = len([v for v in visible.split(",") if v.strip()]), f"CUDA_VISIBLE_DEVICES={visible} leaves"
    per = processes[0].devices
    need = len(processes) * per
    if need <= seen:
        return
    names = sorted({getattr(g, "kind", None) or "GPU" for g in gpus})
    fits = seen // per
    raise UsageError(
        f"--processes {len(processes)} x --devices-per-process {per} needs {need} GPUs; {where} "
        f"{seen} ({', '.join(names) or 'none'})",
        hint=(f"give --processes {fits} or fewer" if fits >= 2 else "run one process (leave --processes out)")
        + " with that many devices each, or use --platform cpu (CPU devices) for a multi-process "
        "run without GPUs",
    )


def _proxy_bypass(caller_env: dict[str, str], env_values: dict[str, str | None]) -> dict[str, str]:
    """no_proxy/NO_PROXY with loopback added, when any other proxy variable is set (gRPC honours them)."""
    merged = {**caller_env, **{k: v for k, v in env_values.items() if v is not None}}
    proxies = [k for k in merged if k.lower().endswith("_proxy") and k.lower() != "no_proxy" and merged[k]]
    if not proxies:
        return {}
    hosts: list[str] = []
    for item in f"{merged.get('no_proxy') or ''},{merged.get('NO_PROXY') or ''},{_LOOPBACK}".split(","):
        if item.strip() and item.strip() not in hosts:
            hosts.append(item.strip())
    return {"no_proxy": ",".join(hosts), "NO_PROXY": ",".join(hosts)}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (jax's coordinator binds it a moment later)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
