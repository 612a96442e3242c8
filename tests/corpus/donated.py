"""Donated buffers: a jitted update that donates its state (the output aliases the input buffer)."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, donate_argnums=(0,))
def step(state, delta):
    return state * 0.9 + delta, jnp.sum(delta)


state = jnp.ones((64, 32))
for i in range(3):
    state, total = step(state, jnp.full((64, 32), float(i)))
print(float(state.sum()), float(total))
