"""What a dumped module's name says about who made it: TensorFlow's and PyTorch/XLA's
module names are long or generic, so dumps and inspect show a short name and an origin."""

from __future__ import annotations

import re

# Frontend module names -> (short name, origin); the first match wins.
_ORIGINS = (
    (re.compile(r"^a_inference_(?P<short>.+?)_\d+__XlaMustCompile_true"), "tf.function(jit_compile=True)"),
    (re.compile(r"^(?P<short>cluster_\d+)__XlaCompiledKernel_true"), "tensorflow auto-clustering"),
    (re.compile(r"^(?P<short>SyncTensorsGraph(?:\.\d+)?)$"), "torch_xla"),
    (re.compile(r"^(?P<short>(?:jit|pmap|xmap)_.+)$"), "jax"),
)


def frontend_name(name: str) -> tuple[str, str | None]:
    """`a_inference_f_15__XlaMustCompile_true_...` -> (`f`, `tf.function(jit_compile=True)`); unknown: (name, None)."""
    for pattern, origin in _ORIGINS:
        match = pattern.match(name)
        if match:
            return match["short"], origin
    return name, None


# jax compiles these small modules for its own helpers (jnp.arange -> jit_iota, astype, where, ...).
HELPER_PRIMITIVES = frozenset(
    {
        "iota",
        "convert_element_type",
        "broadcast_in_dim",
        "_where",
        "where",
        "reshape",
        "squeeze",
        "expand_dims",
        "concatenate",
        "transpose",
        "_multi_slice",
        "dynamic_slice",
        "dynamic_update_slice",
        "clip",
        "_reduce_sum",
        "_reduce_max",
        "_reduce_min",
        "select_n",
        "pad",
        "_pad",
        "full",
        "_full",
        "zeros_like",
        "ones_like",
        "copy",
        "astype",
        "_convert_element_type",
        "integer_pow",
        "_rem",
        "remainder",
        "_unstack",
        "_split",
        "split",
        "_cumulative_reduction",
        "cumsum",
        "sort",
        "argsort",
        "gather",
        "_gather",
        "scatter",
        "_scatter_impl",
        # jax.random and jnp constructors called outside jit (model initialisation, data): jax's code, not the program's
        "_threefry_seed",
        "_threefry_split",
        "_threefry_fold_in",
        "_threefry_random_bits",
        "_random_bits",
        "_uniform",
        "_normal",
        "_truncated_normal",
        "_bernoulli",
        "_randint",
        "_gamma",
        "_random_split",
        "_random_fold_in",
        "random_seed",
        "random_bits",
        "random_split",
        "random_fold_in",
        "random_wrap",
        "random_unwrap",
        "_linspace",
        "_arange",
        "_eye",
        "_tri",
        # one primitive run eagerly (outside any jit: a model's init, an optimiser's state) is compiled as jit_<primitive>
        "add",
        "sub",
        "subtract",
        "multiply",
        "mul",
        "true_divide",
        "divide",
        "div",
        "sqrt",
        "rsqrt",
        "exp",
        "log",
        "tanh",
        "relu",
        "dot_general",
        "matmul",
        "equal",
        "not_equal",
        "less",
        "greater",
        "bitwise_or",
        "bitwise_and",
        "unstack",
        "negative",
        "neg",
        "abs",
        "maximum",
        "minimum",
        "square",
        "power",
        "pow",
        "stage",  # lax.stage: a host value lifted into jax (newer jax, e.g. jnp.asarray)
    }
)


def is_helper(name: str) -> bool:
    """A module jax compiled for one of its own helpers (`jit_iota`, `jit__where`): replay and inspect leave them out
    unless --all."""
    base = re.sub(r"^(jit|pmap|xla_computation)_", "", name)
    return base in HELPER_PRIMITIVES
