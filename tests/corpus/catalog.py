"""The corpus programs and what each needs (pure data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Program:
    name: str
    about: str
    frontend: str = "jax"  # jax, tensorflow or torch-xla: the interpreter that runs it
    env: dict[str, str] = field(default_factory=dict)  # passed as `xlatools run --env K=V`
    refused: str | None = None  # replay of its own modules is refused by design: the word the refusal must say

    @property
    def path(self) -> Path:
        return HERE / f"{self.name}.py"


PROGRAMS = (
    Program("flax_linen_optax", "flax.linen MLP + optax adam training steps"),
    Program("flax_nnx_attention", "flax.nnx multi-head attention block"),
    Program("diffrax_ode", "equinox + diffrax neural ODE solve and its gradient (while loops)"),
    Program("keras_fit", "Keras 3 on the jax backend: compile + fit", env={"KERAS_BACKEND": "jax"}),
    Program("linalg", "jnp.linalg solve/eigh/svd/qr/cholesky (LAPACK custom calls)"),
    Program("scipy_funcs", "jax.scipy special, stats, logsumexp, convolve"),
    Program("fft", "jnp.fft fft/ifft/rfft/ifft2"),
    Program("sort_topk", "sort, argsort, top_k, median"),
    Program("control_flow", "lax.scan/while_loop/cond/fori_loop"),
    Program("random_sampling", "jax.random normal/uniform/categorical/permutation"),
    Program("x64", "float64/int64 with JAX_ENABLE_X64=1 in the environment", env={"JAX_ENABLE_X64": "1"}),
    Program("low_precision", "bf16, f16 and int8 (int32 accumulation)"),
    Program("custom_vjp", "jax.custom_vjp with its gradient"),
    Program("sharding", "shard_map + psum and pmap + all_gather on 4 CPU devices", refused="devices"),
    Program("donated", "donate_argnums (output aliases input)"),
    Program("host_callback", "pure_callback + debug.print (host callbacks)", refused="callback"),
    Program("tf_keras_jit", "TensorFlow Keras model, jit_compile=True", frontend="tensorflow"),
    Program(
        "torch_xla_model",
        "PyTorch/XLA model: forward, backward, SGD step",
        frontend="torch-xla",
        env={"PJRT_DEVICE": "CPU"},
    ),
)


def by_name(names: list[str]) -> list[Program]:
    known = {p.name: p for p in PROGRAMS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown corpus program(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names]
