"""A real float64 program with LAPACK custom calls (jnp.linalg.solve) for the reduce --error/--script tests."""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def f(a, b):
    x = jnp.linalg.solve(a @ a.T + 3 * jnp.eye(4), b)
    return jnp.tanh(x).sum() * 2.0, x


print(f(np.random.RandomState(0).rand(4, 4), np.random.RandomState(1).rand(4)))
