"""Host callbacks: jax.pure_callback into NumPy and jax.debug.print inside a jitted function.
Modules that call back into the Python process cannot be replayed outside it (refused by design)."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def f(x):
    y = jax.pure_callback(lambda v: np.sin(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    jax.debug.print("sum {s}", s=y.sum())
    return y * 2.0 + x


print(f(jnp.linspace(0.0, 1.0, 8)))
