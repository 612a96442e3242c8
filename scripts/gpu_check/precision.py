"""GPU check section: precision is not a miscompile (issue 28, part 1).

Runs the flax CNN program with a dump, then replays its training step `jit_step` on the GPU against the CPU:
by default (`--precision auto`) the TF32 difference must be classified `precision` (exit 0) with both errors
recorded; `--precision as-compiled` must still say `mismatch` (exit 1); a repro pack made on the GPU must
record `precision` and `repro run` must give the same outcome (nothing to reproduce, exit 5); `--isolate` (when time is left) must not name a TF32
convolution as the first mismatching instruction. On the CPU (`--platform cpu`) the same commands run with the
CPU as the test platform: everything is f32 there, so `ok` is the expected verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

from .core import REPO, Context, flax_python

TITLE = "Precision is not a miscompile (replay --precision)"
ABOUT = (
    "The flax CNN training step differs from the CPU by up to 0.15 on the GPU because its 11 f32 dots and "
    "convolutions run in TF32 (operand precision DEFAULT). replay runs a mismatching module again with them at "
    "full precision: `precision` (exit 0) when it then matches, `mismatch` when it still differs. These checks "
    "record the errors as compiled and at full precision, and that packs, `--precision as-compiled` and "
    "`--isolate` keep the rule."
)
BUDGET_S = 170
PROGRAM = REPO / "scripts" / "gpu_check" / "programs" / "flax_cnn_train.py"
MODULE = "jit_step"


def _time_for(ctx: Context, name: str, seconds: float) -> bool:
    """Whether a command that takes about `seconds` (on the GPU machine) still fits: a check that cannot finish
    inside the budget is skipped, saying so, rather than failed by its timeout."""
    if ctx.seconds_left() >= seconds:
        return True
    ctx.skip(name, f"{ctx.seconds_left():.0f} s left in the section's budget; it needs about {seconds:.0f} s")
    return False


def _json(result) -> dict:
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {}


def _module(data: dict) -> dict:
    return next(iter(data.get("modules") or []), {})


def _errors(module: dict) -> dict[str, float | int | str]:
    """The numbers of a replayed module: its outcome, the error as compiled and at full precision."""
    numbers: dict[str, float | int | str] = {"outcome": module.get("outcome", "?")}
    check = module.get("precision") or {}
    compiled = check.get("as_compiled") or [c for c in module.get("comparisons", []) if c.get("against") != "snapshot"]
    if compiled:
        numbers["max_abs_as_compiled"] = float(f"{max(c.get('max_abs_error', 0.0) for c in compiled):.3g}")
        numbers["mismatches_as_compiled"] = sum(c.get("mismatches", 0) for c in compiled)
    if check.get("highest"):
        numbers["max_abs_at_highest"] = float(f"{max(c.get('max_abs_error', 0.0) for c in check['highest']):.3g}")
    if check:
        numbers["raised"] = len(check.get("raised") or [])
    snapshot = [c for c in module.get("comparisons", []) if c.get("against") == "snapshot"]
    if snapshot:  # the run's own (recorded) result, computed by another GPU compile
        numbers["max_abs_vs_snapshot"] = float(f"{max(c.get('max_abs_error', 0.0) for c in snapshot):.3g}")
    return numbers


def run(ctx: Context) -> None:
    platform = "gpu" if ctx.on_gpu else "cpu"
    python = flax_python(ctx)
    if python is None:
        ctx.skip("flax program run", "no interpreter here has flax + optax (the program's imports)")
        return
    made = ctx.cli(
        "run",
        str(PROGRAM),
        "--python",
        python,
        "--dump",
        "--preset",
        "snapshots",
        "--platform",
        platform,
        "--out",
        "runs",
        "--json",
        timeout=120,
    )
    bundle = _json(made).get("bundle")
    if not ctx.check(
        "flax program run with --dump --preset snapshots",
        made.returncode == 0 and bundle,
        made.tail(4),
        seconds=round(made.seconds, 1),
    ):
        return
    common = [bundle, "--module", MODULE, "--python", python, "--platform", platform, "--reference", "cpu", "--json"]
    tf32 = ctx.on_gpu  # the CPU computes every f32 dot in f32: nothing to classify there

    if not _time_for(ctx, "replay (default)", 25):
        return
    auto = ctx.cli("replay", *common, "--out", "auto", timeout=90)
    module = _module(_json(auto))
    want = "precision" if tf32 else "ok"
    ctx.check(
        f"replay --platform {platform} --reference cpu: {want}",
        auto.returncode == 0 and module.get("outcome") == want,
        " | ".join(module.get("notes") or []) or auto.tail(3),
        exit=auto.returncode,
        seconds=round(auto.seconds, 1),
        **_errors(module),
    )

    if not _time_for(ctx, "replay --precision as-compiled", 15):
        return
    strict = ctx.cli("replay", *common, "--precision", "as-compiled", "--out", "strict", timeout=60)
    module = _module(_json(strict))
    want, code = ("mismatch", 1) if tf32 else ("ok", 0)
    ctx.check(
        f"replay --precision as-compiled: {want}",
        strict.returncode == code and module.get("outcome") == want,
        strict.tail(2),
        exit=strict.returncode,
        seconds=round(strict.seconds, 1),
        **_errors(module),
    )

    _pack(ctx, bundle, python, platform, "precision" if tf32 else "ok")
    if not _time_for(ctx, "replay --isolate jit_step", 45):
        return
    isolated = ctx.cli("replay", *common, "--isolate", "--out", "isolate", timeout=max(10.0, ctx.seconds_left() - 5))
    if isolated.returncode == 124:
        ctx.skip("replay --isolate jit_step", f"did not finish in the {isolated.seconds:.0f} s left of the budget")
        return
    isolation = _json(isolated).get("isolation") or {}
    first = isolation.get("first_mismatch") or {}
    ctx.check(
        "replay --isolate jit_step: no TF32 instruction named first",
        isolated.returncode in (0, 1) and first.get("opcode") not in ("convolution", "dot"),
        f"first mismatch: {first.get('name', 'none')} {first.get('opcode', '')}; " + isolated.tail(2),
        oracle_calls=isolation.get("oracle_calls", 0),
        exit=isolated.returncode,
        seconds=round(isolated.seconds, 1),
    )


def _pack(ctx: Context, bundle: str, python: str, platform: str, want: str) -> None:
    if not _time_for(ctx, "repro pack and run of jit_step", 45):
        return
    pack = Path(ctx.work) / "step.tar.gz"
    made = ctx.cli(
        "repro",
        "pack",
        bundle,
        "--module",
        MODULE,
        "--python",
        python,
        "--platform",
        platform,
        "--reference",
        "cpu",
        "-o",
        str(pack),
        "--out",
        "packs",
        "--json",
        timeout=90,
    )
    expected = " ".join((_json(made).get("expected") or {}).values())
    if not ctx.check(
        f"repro pack of jit_step records {want}",
        made.returncode == 0 and expected.startswith(want),
        expected or made.tail(3),
        seconds=round(made.seconds, 1),
    ):
        return
    if not _time_for(ctx, "repro run of that pack", 20):
        return
    again = ctx.cli("repro", "run", str(pack), "--python", python, "--out", "packs", "--json", timeout=90)
    answer = _json(again)
    # A pack whose module ends ok or precision records no failure: its repro run answers nothing-to-reproduce
    # (exit 5) and lists any difference from the recorded outcome; none is the repeatable answer.
    ctx.check(
        "repro run of that pack: the same outcome, nothing to reproduce",
        again.returncode == 5 and answer.get("outcome") == "nothing-to-reproduce" and not answer.get("differences"),
        f"{answer.get('outcome')}: {answer.get('reason', again.tail(2))}",
        exit=again.returncode,
        differences=len(answer.get("differences") or []),
        seconds=round(again.seconds, 1),
    )
