"""GPU check section: slowdowns measured, explained and recovered; why it compiled again (issues 38 and 42).

A chain of eight 4096x4096 f32 matrix products (programs/matmul_chain.py) runs with `--dump`: its metrics must
be there and plausible: compile seconds, the exact argument and output bytes, and call times that include the
GPU's work (the chain's FLOPs at a TFLOP/s a GPU can reach, well above the time a call takes to return without
waiting, close to the program's own synchronised timing). `inspect` shows them. One process then times the
chain compiled with each switch of bisect/switches.yaml, as it is and with autotuning off (programs/
switch_probe.py); where a switch makes a setting at least 1.5x faster, `bisect flags` runs on that deliberately
slowed setting with a threshold between the two and must name that switch. `diff` shows the run-time ratio of
the program with the switch of the largest effect against the program as it is; `replay --reference-python`
times the module on both sides (its `slower` column). `explain-cache` (where the tree has it) must name the
XLA flag that made a GPU run miss jax's persistent cache. On the CPU (`--platform cpu`) the same commands run
on a smaller chain; `bisect flags` is run with a threshold nothing reaches (the command and its table only).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .core import REPO, Context, parse_json

TITLE = "Slowdowns measured and recovered; why it compiled again (metrics, bisect flags, diff, explain-cache)"
ABOUT = (
    "Every run measures its modules (docs/metrics.md). On the GPU a call's time must include the GPU's work: "
    "a chain of eight 4096x4096 f32 products (TF32) is 1.1 TFLOP, so its time must give a TFLOP/s a GPU can "
    "reach and be far above the time a call takes to return unsynchronised. The GPU switches of "
    "bisect/switches.yaml are timed in one process; `bisect flags` must name the switch that recovers a "
    "deliberately slowed setting; `diff` shows a switch's run-time ratio; `explain-cache` must name the XLA "
    "flag that made a run miss the persistent cache (docs/cache.md)."
)
BUDGET_S = 160
PROGRAMS = REPO / "scripts" / "gpu_check" / "programs"
CHAIN, PROBE, CACHED = PROGRAMS / "matmul_chain.py", PROGRAMS / "switch_probe.py", PROGRAMS / "cache_step.py"
MODULE = "jit_chain"
SIZE = {"gpu": 4096, "cpu": 384}
# TFLOP/s a synchronised call can show: the GPU bound is twice the H200's dense TF32 peak (about 495); an
# unsynchronised call (tens of microseconds for 1.1 TFLOP) would show tens of thousands.
TFLOPS = {"gpu": (5.0, 1000.0), "cpu": (0.0005, 5.0)}
# Settings a switch may recover (compile options: the DebugOptions fields XLA_FLAGS sets). GPU only.
SLOWED: dict[str, dict[str, object]] = {"as-is": {}, "autotune-off": {"xla_gpu_autotune_level": 0}}
RECOVERY = 1.5  # a switch recovers a slowed setting in the probe when it makes it this much faster
CACHE_FLAG = {"gpu": "--xla_gpu_autotune_level=3", "cpu": "--xla_cpu_enable_fast_math=false"}


def _options(flag: str) -> dict[str, object]:
    """`--name=value` as a compile option (`true`/`false` as booleans, digits as integers)."""
    name, _, value = flag.lstrip("-").partition("=")
    parsed: object = {"true": True, "false": False}.get(value, int(value) if value.isdigit() else value)
    return {name: parsed}


def _flags(options: dict[str, object]) -> list[str]:
    return [f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in options.items()]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def _chain_run(ctx: Context, out: str, *extra: str) -> tuple[dict, dict]:
    """`run matmul_chain.py --dump` (5 calls timed): (run --json, the chain's metrics record)."""
    done = ctx.cli(
        "run", str(CHAIN), "--dump", "--measure-calls", "5", "--platform", ctx.platform,
        "--env", f"GC_N={SIZE[ctx.platform]}", *extra, "--out", out, "--json", "--quiet", timeout=150,
    )  # fmt: skip
    data = parse_json(done)
    data["_result"] = done
    modules = (data.get("metrics") or {}).get("modules") or []
    return data, next((m for m in modules if m.get("name") == MODULE), {})


def metrics(ctx: Context) -> tuple[Path | None, float]:
    """The run's metrics are there, exact where they can be, and its call times include the GPU's work."""
    data, module = _chain_run(ctx, "runs")
    done, n = data["_result"], SIZE[ctx.platform]
    bundle = Path(data["bundle"]) if data.get("bundle") else None
    calls, memory = module.get("calls") or {}, module.get("memory") or {}
    timed = (calls.get("wall_s") or [])[calls.get("warmup", 1) :]
    processes = (data.get("metrics") or {}).get("processes") or [{}]
    run_s = _median(timed)
    exact = memory.get("argument_bytes") == 2 * n * n * 4 and memory.get("output_bytes") == n * n * 4
    ok = done.returncode == 0 and bool(module.get("compile_s")) and exact and len(timed) == 4
    ctx.check(
        "run --dump records the chain's metrics (compile, bytes, timed calls, peak RSS)",
        ok and (processes[0].get("peak_rss_mb") or 0) > 0,
        (data.get("metrics") or {}).get("mode", "") if ok else done.tail(6),
        compile_s=module.get("compile_s") or 0,
        backend_compile_s=module.get("backend_compile_s") or 0,
        argument_bytes=memory.get("argument_bytes", 0),
        output_bytes=memory.get("output_bytes", 0),
        temp_bytes=memory.get("temp_bytes", 0),
        cost_flops=module.get("flops") or 0,
        peak_rss_mb=processes[0].get("peak_rss_mb") or 0,
        timed_calls=len(timed),
    )
    if done.returncode != 0 or bundle is None:
        return None, 0.0
    log = bundle / "stdout.log"  # --quiet: the program's output is in the bundle
    own_line = [x for x in (log.read_text() if log.is_file() else "").splitlines() if x.startswith("GC-OWN ")]
    own = json.loads(own_line[-1][7:]) if own_line else {}
    low, high = TFLOPS[ctx.platform]
    tflops = own.get("flops", 0) / run_s / 1e12 if run_s else 0.0
    enqueue, synced = own.get("enqueue_s") or 0.0, own.get("synced_s") or 0.0
    agree = (0.5, 2.0) if ctx.on_gpu else (0.25, 4.0)  # a loaded 2-core machine here
    ok = low <= tflops <= high and run_s > 5 * enqueue and synced > 0 and agree[0] <= run_s / synced <= agree[1]
    needed = sum(memory.get(k, 0) for k in ("argument_bytes", "output_bytes", "temp_bytes"))
    peak = own.get("device_peak_bytes") or 0  # the GPU allocator's peak (the CPU reports none)
    ok = ok and (peak >= needed if ctx.on_gpu else True)
    ctx.check(
        "timed calls wait for the work: run_s against the FLOPs, the enqueue time and the program's own timing",
        ok,
        f"{own.get('flops', 0):.3g} flops per call; the program's own numbers: {own}",
        run_ms=round(run_s * 1e3, 3),
        tflops=round(tflops, 2),
        enqueue_ms=round(enqueue * 1e3, 4),
        synced_ms=round(synced * 1e3, 3),
        run_over_synced=round(run_s / synced, 3) if synced else 0,
        device_peak_bytes=peak,
        module_bytes=needed,
    )
    shown = ctx.cli("inspect", str(bundle), timeout=60)
    rows = [line for line in shown.stdout.splitlines() if MODULE in line]
    ok = shown.returncode == 0 and "metrics:" in shown.stdout and "run ms" in shown.stdout and bool(rows)
    ctx.check("inspect shows the metrics table", ok, "\n".join(rows[:2]) or shown.tail(6))
    return bundle, run_s


def probe(ctx: Context) -> dict[str, float]:
    """The chain compiled as it is and with each switch (and, on the GPU, with autotuning off): min seconds."""
    from xlatools.bisect.switches import load

    switches = [s for s in load() if s.backend == ctx.platform]
    slowed = SLOWED if ctx.on_gpu else {"as-is": {}}
    configs = [{"name": x, "options": base} for x, base in slowed.items()]
    configs += [
        {"name": f"{x}+{s.name}", "options": {**base, **_options(s.flag)}}
        for x, base in slowed.items()
        for s in switches
    ]
    done = ctx.python_run(str(PROBE), json.dumps(configs), timeout=150, env={"GC_N": str(SIZE[ctx.platform])})
    answers = [json.loads(x[9:]) for x in done.stdout.splitlines() if x.startswith("GC-PROBE ")]
    times = {a["name"]: a["min_s"] for a in answers if "min_s" in a}
    errors = {a["name"]: a["error"] for a in answers if "error" in a}
    ctx.check(
        f"the chain compiled {len(configs)} ways in one process (switches as compile options)",
        "as-is" in times,
        "; ".join(f"{k}: {v}" for k, v in errors.items())[:500] or done.tail(3),
        seconds=round(done.seconds, 1),
        **{f"{name}_ms": round(t * 1e3, 3) for name, t in times.items()},
    )
    return times


def bisect_flags(ctx: Context, times: dict[str, float]) -> None:
    """On the GPU: the probe's most recovered slowed setting, bisected: the switch must be named."""
    name = "bisect flags names the switch that recovers a deliberately slowed chain"
    if not ctx.on_gpu:
        name = "bisect flags on the CPU: the command and its table (a threshold nothing reaches)"
        args, want = ["--switch", "cpu-xnnpack", "--threshold", "1e-9"], None
    else:
        pairs = [
            (times[x] / t, x, k.split("+", 1)[1])
            for x in SLOWED
            if x in times
            for k, t in times.items()
            if k.startswith(f"{x}+")
        ]
        if not pairs or max(pairs)[0] < RECOVERY:
            best = max(pairs) if pairs else (0.0, "-", "-")
            ctx.skip(
                name,
                f"no switch made a setting {RECOVERY}x faster in the probe (best: {best[2]} on {best[1]}, {best[0]:.2f}x)",
            )
            return
        ratio, slowed, want = max(pairs)
        threshold = math.sqrt(times[slowed] * times[f"{slowed}+{want}"])
        flags = [arg for f in _flags(SLOWED[slowed]) for arg in ("--xla-flag", f)]
        args = [*flags, "--threshold", f"{threshold:.6g}"]
    if not ctx.time_for(name, 40):
        return
    done = ctx.cli(
        "bisect", "flags", "--metric", f"run_s:{MODULE}", *args, "--platform", ctx.platform,
        "--env", f"GC_N={SIZE[ctx.platform] // (1 if ctx.on_gpu else 2)}", "--out", "bisect", "--json", "--quiet",
        "--", str(CHAIN), timeout=max(30.0, ctx.seconds_left() - 45),
    )  # fmt: skip
    table = parse_json(done).get("flags") or {}
    rows = [r for r in table.get("rows") or [] if r.get("tried")]
    recovers = table.get("recovers") or []
    verdicts = "; ".join(f"{r['name']}: {r.get('outcome')} ({r.get('reason')})" for r in rows)
    if want is None:
        ok = done.returncode == 1 and len(rows) == 1 and not recovers
        ctx.check(name, ok, verdicts or done.tail(6), exit=done.returncode, seconds=round(done.seconds, 1))
        return
    predicted = {s: times.get(f"{slowed}+{s}", math.inf) < threshold for s in (r["name"] for r in rows)}
    agree = sum(predicted[r["name"]] == (r.get("outcome") == "good") for r in rows)
    ctx.check(
        name,
        done.returncode == 0 and want in recovers,
        f"slowed: {slowed} ({' '.join(_flags(SLOWED[slowed])) or 'no flag'}); {verdicts or done.tail(6)}",
        exit=done.returncode,
        switch=want,
        probe_ratio=round(ratio, 2),
        threshold_ms=round(threshold * 1e3, 3),
        recovers=",".join(recovers) or "none",
        agree_with_probe=f"{agree}/{len(rows)}",
        seconds=round(done.seconds, 1),
    )


def diff(ctx: Context, bundle: Path, times: dict[str, float]) -> None:
    """The chain with the switch of the largest effect against the chain as it is: diff's run-time ratio."""
    from xlatools.bisect.switches import load

    table = {s.name: s for s in load() if s.backend == ctx.platform}
    effects = {k.split("+", 1)[1]: times[k] / times["as-is"] for k in times if k.startswith("as-is+")}
    effects = {k: v for k, v in effects.items() if k in table}
    if "as-is" not in times or not effects:
        ctx.skip("diff of two runs' metrics", "the probe timed no switch")
        return
    switch = max(effects, key=lambda k: abs(math.log(effects[k])))
    name = f"diff: jit_chain's run time as is -> with {switch}"
    if not ctx.time_for(name, 25):
        return
    data, _ = _chain_run(ctx, "runs-b", "--xla-flag", table[switch].flag)
    if not data.get("bundle"):
        ctx.check(name, False, data["_result"].tail(6))
        return
    done = ctx.cli("diff", str(bundle), data["bundle"], "--json", timeout=60)
    rows = ((parse_json(done).get("metrics") or {}).get("modules")) or []
    cells = {m["metric"]: m for r in rows if r.get("name") == MODULE for m in r.get("metrics") or []}
    run = cells.get("run_s") or {}
    ratio, probed = run.get("ratio") or 0.0, effects[switch]
    ok = done.returncode in (0, 1) and ratio > 0 and math.isclose(ratio, run["b"] / run["a"], rel_tol=1e-6)
    if ctx.on_gpu and abs(math.log(probed)) > math.log(1.3):  # a large effect: diff must show it, separated
        ok = ok and (ratio > 1) == (probed > 1) and bool(run.get("ranked"))
    ctx.check(
        name,
        ok,
        f"{run.get('spread_a')} -> {run.get('spread_b')}" if run else done.tail(6),
        ratio=round(ratio, 3),
        probe_ratio=round(probed, 3),
        ranked=str(run.get("ranked")),
        a_ms=round((run.get("a") or 0) * 1e3, 3),
        b_ms=round((run.get("b") or 0) * 1e3, 3),
    )


def replay_speed(ctx: Context, bundle: Path, run_s: float) -> None:
    """`replay --reference-python` (the same interpreter) times the module on both: the `slower` column."""
    name = "replay --reference-python: the module timed on both sides (speed record)"
    if not ctx.time_for(name, 25):
        return
    done = ctx.cli(
        "replay", str(bundle), "--module", MODULE, "--iterations", "10", "--reference-python", ctx.python,
        "--platform", ctx.platform, "--out", "replay", "--json", timeout=120,
    )  # fmt: skip
    module: dict = next(iter(parse_json(done).get("modules") or []), {})
    speed = module.get("speed") or {}
    runs = {r["label"]: r for r in speed.get("runs") or []}
    test = runs.get("test") or {}
    n = SIZE[ctx.platform]
    tflops = 2.0 * n**3 * 8 / test["min_s"] / 1e12 if test.get("min_s") else 0.0
    low = 0.5  # autotuning off (the deterministic mode) may pick slow kernels: only the upper bound tells much
    ok = done.returncode in (0, 1) and len(runs) == 2 and all(r.get("count") == 10 for r in runs.values())
    if ctx.on_gpu:  # one GPU, one interpreter, one compile mode: the same speed; the chain at a GPU's TFLOP/s
        ok = ok and speed.get("slower") is None and low <= tflops <= TFLOPS["gpu"][1]
    ctx.check(
        name,
        ok,
        f"slower: {speed.get('slower') or 'same'}; {' | '.join(module.get('notes') or [])}"[:500]
        if speed
        else done.tail(6),
        ratio=speed.get("ratio") or 0,
        test_min_ms=round((test.get("min_s") or 0) * 1e3, 3),
        reference=",".join(k for k in runs if k != "test") or "none",
        reference_min_ms=round(max([r.get("min_s") or 0 for k, r in runs.items() if k != "test"] or [0]) * 1e3, 3),
        replay_over_run=round((test.get("min_s") or 0) / run_s, 3) if run_s else 0,
        tflops=round(tflops, 2),
    )


def explain_cache(ctx: Context) -> None:
    """Three runs into one persistent cache: the same (all hit) and with an XLA flag changed (named)."""
    name = "explain-cache names the changed XLA flag of a persistent-cache miss"
    if ctx.cli("explain-cache", "--help", timeout=30).returncode != 0:
        ctx.skip(name, "this tree has no `xlatools explain-cache` (issue 42 not merged)")
        return
    if not ctx.time_for(name, 35):
        return
    bundles: list[str] = []
    for label, extra in (("a", []), ("same", []), ("flag", ["--xla-flag", CACHE_FLAG[ctx.platform]])):
        done = ctx.cli(
            "run", str(CACHED), "--platform", ctx.platform, "--env", f"JAX_COMPILATION_CACHE_DIR={ctx.work / 'jax-cache'}",
            *extra, "--name", label, "--out", "cache", "--json", "--quiet", timeout=90,
        )  # fmt: skip
        made = parse_json(done).get("bundle")
        if not made:
            ctx.check(name, False, f"run {label}: {done.tail(6)}")
            return
        bundles.append(made)
    same = ctx.cli("explain-cache", bundles[0], bundles[1], "--json", timeout=60)
    changed = ctx.cli("explain-cache", bundles[0], bundles[2], "--json", timeout=60)
    report = parse_json(changed)
    again = json.loads((Path(bundles[1]) / "manifest.json").read_text()).get("metrics") or {}
    state = next((m.get("cache") for m in again.get("modules") or [] if m.get("name") == "jit_cached_step"), None)
    causes = [
        c for e in report.get("explanations") or [] if e.get("function") == "cached_step" for c in e.get("causes") or []
    ]
    named = [
        c
        for c in causes
        if c.get("part") == "XLA flags" and CACHE_FLAG[ctx.platform].split("=")[0] in c.get("detail", "")
    ]
    ctx.check(
        name,
        same.returncode == 0 and changed.returncode == 1 and bool(named),
        (named or causes or [{}])[0].get("detail") or changed.tail(6),
        same_exit=same.returncode,
        same_cache=str(state),
        same_misses=parse_json(same).get("misses", -1),
        changed_exit=changed.returncode,
        changed_misses=report.get("misses", -1),
        parts=",".join(sorted({c.get("part", "?") for c in causes})) or "none",
    )


def run(ctx: Context) -> None:
    bundle, run_s = metrics(ctx)
    times = probe(ctx) if ctx.time_for("switch probe", 30) else {}
    if times:
        bisect_flags(ctx, times)
    if bundle is not None and times:
        diff(ctx, bundle, times)
    else:
        ctx.skip("diff of two runs' metrics", "the chain's run or the switch probe failed (above)")
    explain_cache(ctx)
    if bundle is not None:
        replay_speed(ctx, bundle, run_s)
    else:
        ctx.skip("replay --reference-python: the speed record", "the chain's run failed (above)")
