"""A dumping run's environment (pure, part of run/plan.py's plan): dumps go into the bundle, a dumping run must
compile (no persistent-cache hits), and jax keeps each module's StableHLO beside the dump (run/jax_ir.py)."""

from __future__ import annotations

from xlatools.run.env import EnvBuilder, Layer, Source
from xlatools.run.frontends import dumping_env
from xlatools.run.jax_ir import dump_to

DUMP_DIR = "{bundle}/xla_dump"


def dump_into_bundle(
    env: EnvBuilder, caller_env: dict[str, str], notes: list[str], frontend: str, jaxlib: str | None
) -> str | None:
    """Dumps always go into the bundle, with each module's StableHLO (run/jax_ir.py), and a dumping run must
    compile (no cache hits)."""
    dumping = any(name.startswith("xla_dump") for name in env.flags.flags if name != "xla_dump_to")
    if not dumping and "xla_dump_to" not in env.flags.flags:
        return None
    old = env.flags.flags.get("xla_dump_to")
    if old is not None:
        notes.append(f"{old[0]} (from {old[1]}) replaced: dumps go into the bundle")
    env.flags.add([f"--xla_dump_to={DUMP_DIR}"], Source(Layer.XLATOOLS, "xlatools (bundle)"))
    dumping_run = Source(Layer.XLATOOLS, "xlatools (dumping run)")
    env.set("JAX_ENABLE_COMPILATION_CACHE", "false", dumping_run)
    if caller_env.get("JAX_COMPILATION_CACHE_DIR") or "JAX_COMPILATION_CACHE_DIR" in env.values:
        env.set("JAX_COMPILATION_CACHE_DIR", None, dumping_run)
    for name, value in dumping_env(frontend).items():
        env.set(name, value, dumping_run)
    if (jax_ir := dump_to(frontend, jaxlib)) and env.get("JAX_DUMP_IR_TO")[0] is None:  # --preset jax:ir, --env win
        env.set("JAX_DUMP_IR_TO", jax_ir, Source(Layer.XLATOOLS, "xlatools (dumping run: each module's StableHLO)"))
    notes.append("persistent compilation cache disabled (a cache hit compiles nothing, so dumps nothing)")
    return DUMP_DIR
