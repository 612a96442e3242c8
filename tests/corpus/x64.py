"""float64 / int64 with x64 turned on by the environment (the corpus runs it with JAX_ENABLE_X64=1):
a large f64 reduction whose f32 answer differs, and an s64 cumulative sum."""

import jax
import jax.numpy as jnp
import numpy as np

assert jax.config.jax_enable_x64, "run with JAX_ENABLE_X64=1"


@jax.jit
def precise(x, n):
    return jnp.sum(x * x, axis=0) / 3.0, jnp.cumsum(n) * 3_000_000_000


x = jnp.asarray(np.random.RandomState(0).normal(size=(16385, 3)))  # f64 under x64
n = jnp.arange(40, dtype=jnp.int64)
s, c = precise(x, n)
print(s.dtype, c.dtype, np.asarray(s), int(c[-1]))
