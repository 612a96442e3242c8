"""A jitted step whose host callback calls os.abort() (gpu-check faults: the run must record the death by
SIGABRT with the crashing thread's native frames)."""

import os

import jax
import jax.numpy as jnp


def die(x):
    os.abort()


@jax.jit
def crash_step(x):
    y = jnp.cos(x) + 1.0
    return jax.pure_callback(die, jax.ShapeDtypeStruct(y.shape, y.dtype), y)


x = jnp.ones(1024, jnp.float32)
print("before the crash", float(jnp.sum(x)), flush=True)
crash_step(x).block_until_ready()
print("not reached", flush=True)
