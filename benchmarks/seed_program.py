"""The seed program of the run-overhead measurements: alpha * dot(x, y) + beta * z, jitted on CPU."""

import jax
import jax.numpy as jnp


def fn(x, y, z, alpha=2.0, beta=3.0):
    return alpha * jnp.dot(x, y) + beta * z


if __name__ == "__main__":
    x = jnp.ones((2, 4, 3))
    y = jnp.ones((3, 2))
    z = jnp.ones((2, 4, 2))
    print(float(jax.jit(fn)(x, y, z).sum()))
