"""GPU check section: GPU machines as they are (issue 30).

Multi-process runs that cannot fit the GPUs are refused before launch and one-process GPU runs work; the
debugger is found without XLATOOLS_GDB (cuda-gdb where CUDA installs it) and stops in a pass; every GPU preset
runs on a smoke program and writes what it promises; inspect lists a module's GPU files; a multi-module replay
runs in long-lived workers, timed against a process per module. On the CPU (`--platform cpu`) the same commands
run with the CPU as the platform (the refusal needs a GPU and is skipped; Debian's gdb stands in for cuda-gdb).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .core import Context

TITLE = "GPU machines as they are (multi-process, cuda-gdb, GPU presets, replay workers)"
ABOUT = (
    "A 2-process run on a one-GPU machine used to give process 1 a GPU that does not exist; it hung until the "
    "timeout. Such runs are now refused before launch (exit 2, seconds), and a process that prints a fatal error "
    "and stalls stops its peers. GPU machines ship cuda-gdb and no gdb: doctor must name it and `debug "
    "--break-pass` must stop with it, with no XLATOOLS_GDB. The GPU presets (NCCL, cuDNN, cuBLAS logs, "
    "autotune results, deterministic, f32, CUDA graphs off, synchronous launches, exact allocations) run "
    "together on smoke programs; `inspect` lists the GPU files of a module; replay of a multi-module bundle is "
    "timed with long-lived workers and with a process per module."
)
BUDGET_S = 150
SMOKE = "dot,matmul,conv,reduce,while,grad"
# deterministic before autotune: the mode turns autotuning off, the autotune preset (later) sets level 4 again.
PRESETS = (
    "nccl",
    "cudnn-log",
    "cublas-log",
    "deterministic",
    "autotune",
    "f32",
    "no-cuda-graphs",
    "sync-launch",
    "exact-alloc",
)
DEBUG_PROGRAM = """\
import jax, jax.numpy as jnp

@jax.jit
def f(x, y):
    return jnp.sin(x) * 2.0 + y * 1.0

print(f(jnp.ones(4), jnp.ones(4)))
"""


def _json(result) -> dict:
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {}


def _time_for(ctx: Context, name: str, seconds: float) -> bool:
    if ctx.seconds_left() >= seconds:
        return True
    ctx.skip(name, f"{ctx.seconds_left():.0f} s left in the section's budget; it needs about {seconds:.0f} s")
    return False


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size if path.is_file() else 0


def multiprocess(ctx: Context) -> Path | None:
    """Too many processes for the GPUs: refused before launch. One process: works. Returns that run's bundle."""
    if ctx.on_gpu:
        done = ctx.cli("run", "smoke:multiprocess", "--processes", "2", "--platform", "gpu", "--out", "mp", timeout=60)
        refused = done.returncode == 2 and "needs 2 GPUs" in done.stderr and not (ctx.work / "mp").exists()
        ctx.check(
            "2 processes on a 1-GPU machine refused before launch",
            refused,
            done.tail(4),
            exit=done.returncode,
            seconds=round(done.seconds, 1),
        )
    else:
        ctx.skip("2 processes on a 1-GPU machine refused before launch", "needs a GPU (CPU devices are made up)")
    done = ctx.cli(
        "run",
        f"smoke:{SMOKE}",
        "--processes",
        "1",
        "--platform",
        ctx.platform,
        "--dump",
        "--out",
        "runs",
        "--json",
        timeout=120,
    )
    data = _json(done)
    devices = [d.get("kind") for d in (data.get("jax") or {}).get("devices", [])]
    ok = done.returncode == 0 and data.get("status") == "ok"
    ctx.check(
        "--processes 1 runs the smoke programs",
        ok,
        done.tail(4) if not ok else f"devices: {devices}",
        exit=done.returncode,
        seconds=round(done.seconds, 1),
        modules=len((data.get("dump") or {}).get("modules", [])),
    )
    return Path(data["bundle"]) if ok and data.get("bundle") else None


def debugger(ctx: Context) -> None:
    """doctor names the debugger it found without XLATOOLS_GDB; `debug --break-pass algsimp` stops with it."""
    env = {"XLATOOLS_GDB": ""}
    if not ctx.on_gpu:  # Debian's gdb in cuda-gdb's layout and name, and a PATH without gdb
        gdb = shutil.which("gdb")
        if gdb is None:
            ctx.skip("cuda-gdb found without XLATOOLS_GDB", "no gdb here to stand in for cuda-gdb")
            return
        (ctx.work / "cuda" / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(gdb, ctx.work / "cuda" / "bin" / "cuda-gdb")
        (ctx.work / "nogdb").mkdir(exist_ok=True)
        (ctx.work / "nogdb" / "sh").symlink_to("/bin/sh")
        env.update(CUDA_HOME=str(ctx.work / "cuda"), PATH=str(ctx.work / "nogdb"))
    done = ctx.cli("doctor", "--json", env=env, timeout=90)
    check = next((c for c in _json(done).get("checks", []) if c.get("name") == "gdb"), {})
    found = check.get("status") == "ok" and "cuda-gdb" in check.get("evidence", "")
    ctx.check(
        "cuda-gdb found without XLATOOLS_GDB (doctor)",
        found,
        check.get("evidence") or done.tail(4),
        seconds=round(done.seconds, 1),
    )
    if not found or not _time_for(ctx, "debug --break-pass algsimp stops under cuda-gdb", 45):
        return
    (ctx.work / "prog.py").write_text(DEBUG_PROGRAM)
    done = ctx.cli(
        "debug",
        "run",
        "prog.py",
        "--break-pass",
        "algsimp",
        "--hlo-module",
        "^jit_f$",
        "--platform",
        ctx.platform,
        "--out",
        "dbg",
        "--json",
        env=env,
        timeout=max(30.0, ctx.seconds_left() - 60),
    )
    data = _json(done)
    stops = data.get("stops") or []
    stopped = done.returncode == 0 and bool(stops)
    frames = 0
    if stopped and data.get("bundle"):
        trace = Path(data["bundle"]) / stops[0].get("dir", "") / "backtrace.txt"
        frames = trace.read_text(errors="replace").count("\n#") if trace.is_file() else 0
    ctx.check(
        "debug --break-pass algsimp stops under cuda-gdb",
        stopped,
        (stops[0].get("class", "") if stops else done.tail(6)),
        exit=done.returncode,
        stops=len(stops),
        frames=frames,
        seconds=round(done.seconds, 1),
    )


def presets(ctx: Context) -> None:
    """Every GPU preset at once on smoke programs (plus dump:llvm); the files each promises; inspect's GPU files."""
    args = [arg for name in PRESETS for arg in ("--preset", f"gpu:{name}")]
    done = ctx.cli(
        "run",
        "smoke:matmul,conv",
        "--platform",
        ctx.platform,
        *args,
        "--preset",
        "dump:llvm",
        "--dump",
        "--out",
        "presets",
        "--json",
        timeout=120,
    )
    data = _json(done)
    bundle = Path(data["bundle"]) if data.get("bundle") else None
    if done.returncode != 0 or bundle is None:
        ctx.check("GPU presets run together", False, done.tail(8), exit=done.returncode)
        return
    sizes = {
        name: _size(bundle / name)
        for name in ("nccl", "cudnn.log", "cublas.log", "cublaslt.log", "autotune_results.pbtxt")
    }
    flags = " ".join(data.get("xla_flags") or [])
    reached = all(
        f in flags
        for f in ("--xla_gpu_autotune_level=4", "--xla_gpu_enable_command_buffer=", "--xla_gpu_deterministic_ops")
    )
    ctx.check(
        "GPU presets run together",
        reached,
        f"XLA_FLAGS: {flags[:300]}",
        exit=done.returncode,
        seconds=round(done.seconds, 1),
    )
    if ctx.on_gpu:  # NCCL writes only when a collective crosses GPUs: a number, not a promise, on one GPU
        if sizes["autotune_results.pbtxt"] == 0:  # together with f32 and deterministic nothing may be autotuned
            alone = ctx.cli(
                "run",
                "smoke:matmul,conv",
                "--platform",
                "gpu",
                "--preset",
                "gpu:autotune",
                "--dump",
                "--out",
                "autotune",
                "--json",
                timeout=90,
            )
            found = _json(alone).get("bundle")
            sizes["autotune_results.pbtxt"] = _size(Path(found) / "autotune_results.pbtxt") if found else 0
            sizes["autotune_alone"] = 1
        written = (
            all(sizes[n] > 0 for n in ("cudnn.log", "autotune_results.pbtxt"))
            and (sizes["cublas.log"] + sizes["cublaslt.log"]) > 0
        )
        ctx.check(
            "the GPU presets' logs and results are in the bundle",
            written,
            json.dumps(sizes),
            **{k.replace(".", "_") + "_bytes": v for k, v in sizes.items()},
        )
    else:
        ctx.skip(
            "the GPU presets' logs and results are in the bundle", f"CPU: no CUDA library loads ({json.dumps(sizes)})"
        )
    shown = ctx.cli("inspect", str(bundle), "--json", timeout=60)
    modules = _json(shown).get("modules") or []
    kinds = sorted({kind for m in modules for kind in (m.get("gpu_files") or {})})
    files = sum(len(v) for m in modules for v in (m.get("gpu_files") or {}).values())
    ptx = sum(len((m.get("gpu_files") or {}).get("ptx", [])) for m in modules)
    ok = shown.returncode == 0 and (bool(kinds) if ctx.on_gpu else True)
    ctx.check(
        "inspect lists the GPU files of the modules",
        ok,
        ", ".join(kinds) or "(none: a CPU dump)",
        modules=len(modules),
        gpu_files=files,
        ptx=ptx,
        kinds=len(kinds),
    )


def replay(ctx: Context, bundle: Path | None) -> None:
    """A multi-module bundle replayed with workers, and (time permitting) with a process per module."""
    if bundle is None:
        ctx.skip("replay of a multi-module bundle in workers", "no smoke bundle (its run failed)")
        return
    timings = {}
    for mode, workers in (("workers", "1"), ("process per module", "0")):
        if mode != "workers" and not _time_for(ctx, "replay with a process per module (baseline)", 40):
            break
        done = ctx.cli(
            "replay",
            str(bundle),
            "--out",
            f"replay-{workers}",
            "--json",
            env={"XLATOOLS_REPLAY_WORKERS": workers},
            timeout=120,
        )
        data = _json(done)
        count = len(data.get("modules") or [])
        timings[mode] = round(done.seconds, 1)
        ctx.check(
            f"replay of a {count}-module bundle ({mode})",
            done.returncode in (0, 1) and count > 1,
            done.tail(3)
            if done.returncode not in (0, 1)
            else f"outcomes: {sorted({m.get('outcome') for m in data.get('modules') or []})}",
            exit=done.returncode,
            modules=count,
            seconds=timings[mode],
        )
    if len(timings) == 2:
        ctx.check(
            "workers cost less than a process per module",
            timings["workers"] < timings["process per module"],
            "",
            ratio=round(timings["process per module"] / max(timings["workers"], 0.1), 2),
        )


def run(ctx: Context) -> None:
    bundle = multiprocess(ctx)
    presets(ctx)
    replay(ctx, bundle)
    debugger(ctx)
