"""Structured control flow: lax.scan, lax.while_loop, lax.cond and lax.fori_loop in one function."""

import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def loops(x):
    cumulative, _ = lax.scan(lambda c, v: (c + v, c * v), jnp.zeros(()), x)
    count = lax.while_loop(lambda s: s[0] < 10.0, lambda s: (s[0] * 1.5 + 1.0, s[1] + 1), (x[0], 0))[1]
    branch = lax.cond(cumulative > 0, lambda v: jnp.sin(v), lambda v: jnp.cos(v), x)
    total = lax.fori_loop(0, 7, lambda i, acc: acc + i * x[i % x.shape[0]], 0.0)
    return cumulative, count, branch, total


print(loops(jnp.linspace(-1.0, 2.0, 9)))
