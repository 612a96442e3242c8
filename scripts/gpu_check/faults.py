"""GPU check section: a GPU program that hangs or dies, and the form a GPU module replays from (issues 39, 40).

A jitted step whose host callback never returns (programs/hang_callback.py) runs with `--stall 8`: the run
must stop itself, read every thread's stacks with pystack (carried as a wheel; without it the record must say
why), name the module last executed and leave nothing running. A jitted step whose host callback calls
os.abort() (programs/abort_callback.py) must end `killed by SIGABRT` with the crashing thread's native frames
(cuda-gdb on a GPU machine), and `inspect` must show them. The flax program runs with `--dump --preset
snapshots` in the deterministic GPU mode (the mode every GPU replay compiles in); `replay` of its `jit_step`
must compile the module's StableHLO and say it is the run's own module. On the CPU (`--platform cpu`) the
same commands run on the CPU.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .core import REPO, CliResult, Context, flax_python, parse_json

TITLE = "A GPU program that hangs or dies; replay from the StableHLO (run --stall, crash records, replay forms)"
ABOUT = (
    "A host callback that never returns inside a jitted step: `run --stall` must read every thread's stacks "
    "(pystack) before it stops the run and name the module last executed. A host callback that calls "
    "os.abort(): the run must record SIGABRT and the crashing thread's frames (cuda-gdb on GPU machines). The "
    "flax CNN's training step, dumped in the deterministic GPU mode, must replay from its StableHLO as the "
    "run's own module (docs/replay.md)."
)
BUDGET_S = 90
PROGRAMS = REPO / "scripts" / "gpu_check" / "programs"
STALL_S = 8
# pystack reads each process twice (locals, then native frames); a GPU jaxlib has many symbols to read.
STACKS_TIMEOUT_S = 40
RUN_TIMEOUT_S = 40  # the run's own --timeout: a stall not seen (a process at work) ends there, captured too


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _hang_run(ctx: Context) -> CliResult:
    return ctx.cli(
        "run", str(PROGRAMS / "hang_callback.py"), "--stall", str(STALL_S), "--timeout", str(RUN_TIMEOUT_S),
        "--platform", ctx.platform, "--out", "hang", "--json", "--quiet",
        env={"XLATOOLS_STACKS_TIMEOUT": str(STACKS_TIMEOUT_S)}, timeout=RUN_TIMEOUT_S + 2 * STACKS_TIMEOUT_S + 15,
    )  # fmt: skip


def hang(ctx: Context, done: CliResult) -> None:
    """--stall: the stacks read before the run is stopped, the module named, nothing left running."""
    name = f"run --stall {STALL_S}: a host callback that never returns is named, with every thread's stacks"
    data = parse_json(done)
    stuck = data.get("stuck") or {}
    processes = stuck.get("processes") or [{}]
    first = processes[0]
    executed = (first.get("last_executed") or {}).get("name")
    read = bool(stuck.get("tool", "").startswith("pystack"))
    stacks = Path(data["bundle"]) / first["file"] if data.get("bundle") and first.get("file") else None
    text = stacks.read_text(errors="replace") if stacks and stacks.is_file() else ""
    leftovers = [p["pid"] for p in processes if p.get("pid") and _alive(p["pid"])]
    ok = done.returncode == 124 and executed == "jit_stuck_step" and not leftovers
    ok = ok and (
        "wait_forever" in text if read else "pystack" in stuck.get("tool", "")  # else the record says why
    )
    ctx.check(
        name,
        ok,
        f"{stuck.get('reason')}; {stuck.get('summary')}; tool: {stuck.get('tool')}" if stuck else done.tail(6),
        exit=done.returncode,
        trigger=str(stuck.get("trigger")),
        state=str(first.get("state")),
        last_executed=str(executed),
        capture_s=stuck.get("seconds") or 0,
        threads=first.get("threads") or 0,
        stack_bytes=len(text),
        gpu_frames=sum("cuda" in line.lower() or "::gpu::" in line for line in text.splitlines()),
        left_running=len(leftovers),
        seconds=round(done.seconds, 1),
    )


def _crash_run(ctx: Context) -> CliResult:
    return ctx.cli(
        "run", str(PROGRAMS / "abort_callback.py"), "--timeout", "70", "--platform", ctx.platform,
        "--out", "crash", "--json", "--quiet", timeout=90,
    )  # fmt: skip


def crash(ctx: Context, done: CliResult) -> None:
    """os.abort() in a host callback: SIGABRT recorded, the native backtrace kept, inspect shows the frames."""
    name = "a host callback's os.abort(): SIGABRT and the crashing thread's frames recorded"
    data = parse_json(done)
    bundle = Path(data["bundle"]) if data.get("bundle") else None
    trace = bundle / data["native_backtrace"] if bundle and data.get("native_backtrace") else None
    text = trace.read_text(errors="replace") if trace and trace.is_file() else ""
    shown = ctx.cli("inspect", str(bundle), "--json", timeout=60) if bundle else None
    lines = ((parse_json(shown).get("run") or {}).get("crash") or []) if shown else []
    frames = [line for line in lines if line.strip().startswith("#")]
    command = re.search(r"^\$ (\S+)", text, flags=re.M)  # the debugger's command line, in the file's header
    debugger = Path(command.group(1)).name if command else "none"
    ok = data.get("signal") == "SIGABRT" and "SIGABRT" in " ".join(lines) and bool(text) and bool(frames)
    ctx.check(
        name,
        ok,
        "\n".join(lines[:4]) if lines else done.tail(6),
        exit=done.returncode,
        signal=str(data.get("signal")),
        outcome=str(data.get("program_outcome")),
        backtrace_bytes=len(text),
        frames_shown=len(frames),
        threads=text.count("\nThread "),
        debugger=debugger,
        seconds=round(done.seconds, 1),
    )


def _flax_run(ctx: Context, python: str) -> CliResult:
    mode = ["--preset", "gpu:deterministic"] if ctx.on_gpu else []  # the mode every GPU replay compiles in
    return ctx.cli(
        "run", str(PROGRAMS / "flax_cnn_train.py"), "--python", python, "--dump", "--preset", "snapshots", *mode,
        "--platform", ctx.platform, "--out", "flax", "--json", "--quiet", timeout=120,
    )  # fmt: skip


def stablehlo(ctx: Context, python: str, made: CliResult) -> None:
    """The flax step dumped in the deterministic mode, replayed: from its StableHLO, the run's own module."""
    name = "replay of the flax jit_step compiles its StableHLO as the run's own module"
    bundle = parse_json(made).get("bundle")
    if not bundle:
        ctx.check(name, False, made.tail(6), exit=made.returncode, seconds=round(made.seconds, 1))
        return
    if not ctx.time_for(name, 15):
        return
    done = ctx.cli(
        "replay", bundle, "--module", "jit_step", "--python", python, "--platform", ctx.platform,
        "--out", "replay", "--json", timeout=max(15.0, ctx.seconds_left() - 3),
    )  # fmt: skip
    module: dict = next(iter(parse_json(done).get("modules") or []), {})
    test: dict = next((r for r in module.get("runs") or [] if r.get("label") == "test"), {})
    form = (test.get("loaded_from") or {}).get("kind")
    ok = module.get("outcome") == "ok" and form == "mlir" and module.get("compiled_as_run") is True
    ctx.check(
        name,
        done.returncode == 0 and ok,
        " | ".join(module.get("notes") or []) or done.tail(6),
        exit=done.returncode,
        outcome=str(module.get("outcome")),
        form=str(form),
        compiled_as_run=str(module.get("compiled_as_run")),
        inputs=str((module.get("input_source") or {}).get("kind")),
        run_seconds=round(made.seconds, 1),
        replay_seconds=round(done.seconds, 1),
    )


def run(ctx: Context) -> None:
    """The three programs run side by side (two of them mostly wait: a stall, a debugger); then the replay."""
    from concurrent.futures import ThreadPoolExecutor

    python = flax_python(ctx)
    with ThreadPoolExecutor(max_workers=3) as pool:
        hung, crashed = pool.submit(_hang_run, ctx), pool.submit(_crash_run, ctx)
        flax = pool.submit(_flax_run, ctx, python) if python else None
        hang(ctx, hung.result())
        crash(ctx, crashed.result())
        made = flax.result() if flax else None
    if python is None or made is None:
        ctx.skip("replay of the flax jit_step from its StableHLO", "no interpreter here has flax + optax")
        return
    stablehlo(ctx, python, made)
