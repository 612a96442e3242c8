"""GPU check section: a compile that can be repeated, and real inputs (issue 28, parts 2 and 3)."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .core import REPO, CliResult, Context

TITLE = "A compile that can be repeated; real inputs"
ABOUT = (
    "Which XLA flag set makes a GPU compile repeat: each candidate of xlatools/run/determinism.py compiles the "
    "flax program's jit_step three times (three processes: XLA's autotuner caches its results inside one), and "
    "the distinct optimised-HLO fingerprints and output digests are counted; the shipped mode runs as a plain "
    "`replay` would. Then a pack made on the GPU is run again there (nothing may differ), two runs of the program "
    "are diffed (no module divergence; autotuning-only differences are named as such), `--preset dump:snapshots` "
    "on the GPU either warns or records the arguments itself and replay uses them, and a module the target cannot "
    "parse shows the parser's whole message."
)
BUDGET_S = 150
PROGRAM = REPO / "scripts" / "gpu_check" / "programs" / "flax_cnn_train.py"
# Without flax (the CPU test of this script): the same shape of work in jax alone, its jitted function named step.
JAX_ONLY = """import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.RandomState(0)
images = jnp.asarray(rng.normal(size=(8, 28, 28, 1)), jnp.float32)
kernel = jnp.asarray(rng.normal(size=(3, 3, 1, 16)) * 0.1, jnp.float32)
dense = jnp.asarray(rng.normal(size=(16 * 28 * 28, 10)) * 0.01, jnp.float32)


@jax.jit
def step(kernel, dense, images):
    def loss(k, d):
        x = jax.lax.conv_general_dilated(images, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.mean(jnp.tanh(x.reshape(8, -1) @ d) ** 2)
    value, (gk, gd) = jax.value_and_grad(loss, argnums=(0, 1))(kernel, dense)
    return kernel - 0.1 * gk, dense - 0.1 * gd, value


for i in range(2):
    kernel, dense, value = step(kernel, dense, images)
    print("step", i, float(value))
"""


def _json(result: CliResult) -> dict:
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {}


def _program(ctx: Context) -> Path:
    try:
        import flax  # noqa: F401
        import optax  # noqa: F401

        return PROGRAM
    except ImportError:
        path = ctx.work / "jax_step.py"
        path.write_text(JAX_ONLY)
        return path


def _run(ctx: Context, program: Path, tag: str) -> tuple[CliResult, dict]:
    # The GPU writes no snapshot: asking for them there turns the recorder on; on the CPU it is asked for.
    dumps = (
        ["--preset", "dump:hlo", "--preset", "dump:snapshots"]
        if ctx.on_gpu
        else ["--preset", "dump:hlo", "--record-inputs"]
    )
    result = ctx.cli(
        "run", str(program), "--platform", ctx.platform, *dumps, "--out", f"runs-{tag}", "--json", timeout=120
    )
    return result, _json(result)


def _compile(ctx: Context, bundle: str, tag: str, flags: tuple[str, ...] | None) -> dict:
    """One replay of jit_step (a fresh process): its fingerprint and output digests. The same seeded inputs each time
    and nothing to compare with: only the compile and its bits are measured (no precision re-runs)."""
    extra = ["--nondeterministic", *(f"--xla-flag={f}" for f in flags)] if flags is not None else []
    result = ctx.cli(
        "replay",
        bundle,
        "--module",
        "jit_step",
        "--platform",
        ctx.platform,
        *extra,
        "--inputs",
        "random",
        "--seed",
        "0",
        "--json",
        "--out",
        f"compiles/{tag}",
        timeout=90,
    )
    module = (_json(result).get("modules") or [{}])[0]
    return {
        "fingerprint": module.get("fingerprint"),
        "outputs": tuple(o.get("sha256") for o in module.get("outputs", [])),
        "seconds": result.seconds,
        "error": None if module.get("fingerprint") else result.tail(4),
    }


def _candidates(ctx: Context, bundle: str) -> None:
    sys.path.insert(0, str(REPO))
    from xlatools.run.determinism import CANDIDATES, LOAD_AUTOTUNE, MODE

    tuned = sorted(Path(bundle, "xla_dump").glob("*jit_step*autotune_results.pbtxt"))
    sets: dict[str, tuple[str, ...] | None] = {name: flags for name, flags in CANDIDATES.items() if name != MODE}
    if tuned:
        sets["load_autotune+deterministic_ops"] = (f"{LOAD_AUTOTUNE}={tuned[0]}", "--xla_gpu_deterministic_ops=true")
    else:
        ctx.skip(
            "candidate load_autotune+deterministic_ops", "the run's dump has no autotune_results.pbtxt of jit_step"
        )
    sets[f"{MODE} (shipped: plain replay)"] = None  # xlatools' own default, as a user gets it
    order = (
        f"{MODE} (shipped: plain replay)",
        "none",
        "deterministic_ops",
        "autotune0",
        "load_autotune+deterministic_ops",
    )
    for position, name in enumerate(sorted(sets, key=lambda n: order.index(n) if n in order else len(order))):
        if not ctx.on_gpu and position >= 2:  # the CPU test of this script: the shipped mode and none are enough
            ctx.skip(f"candidate {name}", "GPU flags: measured on a GPU only")
            continue
        if ctx.seconds_left() < 40:
            ctx.skip(f"candidate {name}", "no time left in the section's budget")
            continue
        with ThreadPoolExecutor(3) as pool:
            found = list(
                pool.map(lambda i, name=name: _compile(ctx, bundle, f"{name.split()[0]}-{i}", sets[name]), range(3))
            )
        ran = [f for f in found if f["fingerprint"]]
        numbers = {
            "compiles": len(ran),
            "fingerprints": len({f["fingerprint"] for f in ran}),
            "output_digests": len({f["outputs"] for f in ran}),
            "max_s": round(max(f["seconds"] for f in found), 1),
        }
        shipped = sets[name] is None
        passed = len(ran) == 3 and (not shipped or numbers["fingerprints"] == numbers["output_digests"] == 1)
        detail = (
            "the shipped mode must give one fingerprint and one set of outputs"
            if shipped
            else "measured (flags: " + " ".join(sets[name] or ("none",)) + ")"
        )
        errors = [f["error"] for f in found if f["error"]]
        ctx.check(
            f"candidate {name}: 3 compiles of jit_step",
            passed,
            detail + ("; " + errors[0] if errors else ""),
            **numbers,
        )


def _recorded_inputs(ctx: Context, bundle: str, data: dict) -> None:
    result = ctx.cli(
        "replay", bundle, "--module", "jit_step", "--platform", ctx.platform, "--json", "--out", "recorded", timeout=90
    )
    module = (_json(result).get("modules") or [{}])[0]
    source = (module.get("input_source") or {}).get("kind")
    warned = any("xla_dump_hlo_snapshots" in w for w in data.get("warnings") or [])
    checks = module.get("comparisons") or [{}]
    ctx.check(
        "snapshots asked: recorded inputs used by replay, or a warning",
        source == "recorded" or warned,
        f"input source {source}; run warnings {data.get('warnings')}; replay outcome {module.get('outcome')} "
        "(against the program's own result, compiled with autotuning: TF32 kernels may differ)",
        input_source=str(source),
        outcome=str(module.get("outcome")),
        max_abs=float(checks[0].get("max_abs_error") or 0.0),
    )


def _pack(ctx: Context, bundle: str) -> None:
    made = ctx.cli(
        "repro",
        "pack",
        bundle,
        "--module",
        "jit_step",
        "--platform",
        ctx.platform,
        "--inputs",
        "random",
        "-o",
        "jit_step.tar.gz",
        "--out",
        "packs",
        timeout=90,
    )
    if made.returncode not in (0, 1):
        ctx.check("a GPU pack run again on the GPU", False, made.tail(6))
        return
    again = ctx.cli("repro", "run", "jit_step.tar.gz", "--json", "--out", "packs", timeout=90)
    if again.returncode == 124:
        ctx.skip("a GPU pack run again on the GPU: nothing differs", "stopped: the section's budget ran out")
        return
    data = _json(again)
    differences = data.get("differences") or []
    ctx.check(
        "a GPU pack run again on the GPU: nothing differs",
        bool(data) and not differences,
        f"{data.get('outcome')}: {data.get('reason')}; differs: {differences}",
        differences=len(differences),
        seconds=round(made.seconds + again.seconds, 1),
    )


def _diff(ctx: Context, first: str, second: CliResult) -> None:
    other = _json(second).get("bundle")
    if not other:
        ctx.check("two runs of the program diff with no module divergence", False, second.tail(6))
        return
    result = ctx.cli("diff", first, other, "--json", timeout=90)
    data = _json(result)
    modules = data.get("modules") or []
    tuned = sum(1 for m in modules if m.get("autotuning_only"))
    ctx.check(
        "two runs of the program diff with no module divergence",
        bool(data) and not data.get("modules_differ") and data.get("headline") is None,
        f"headline {data.get('headline')}; {tuned} module(s) differ only in autotuning",
        modules=len(modules),
        autotuning_only=tuned,
    )


def _parse_error(ctx: Context) -> None:
    (ctx.work / "newer.hlo").write_text(
        "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] frobnicate(p)\n}\n"
    )
    result = ctx.cli("replay", "newer.hlo", "--platform", ctx.platform, "--out", "parse", timeout=60)
    shown = result.stdout + result.stderr
    ctx.check(
        "a module the target cannot parse: the parser's whole message",
        "5:19" in shown and "frobnicate" in shown and "expects opcode" in shown,
        result.tail(4),
        exit_code=result.returncode,
    )


def run(ctx: Context) -> None:
    program = _program(ctx)
    result, data = _run(ctx, program, "first")
    bundle = data.get("bundle")
    if not bundle or result.returncode != 0:
        ctx.check("the program runs with dumps", False, result.tail(8))
        _parse_error(ctx)
        return
    ctx.check(
        "the program runs with dumps",
        True,
        f"{program.name}; notes: {data.get('notes')}",
        seconds=round(result.seconds, 1),
    )
    _parse_error(ctx)
    with ThreadPoolExecutor(1) as pool:
        second = pool.submit(_run, ctx, program, "second")  # the run to diff with, beside the candidates' compiles
        _candidates(ctx, bundle)
        second_run = second.result()[0]
    for part in (
        lambda: _diff(ctx, bundle, second_run),
        lambda: _pack(ctx, bundle),
        lambda: _recorded_inputs(ctx, bundle, data),
    ):
        if ctx.seconds_left() < 15:
            ctx.skip("(rest)", "no time left in the section's budget")
            return
        part()
