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
