"""A jitted step whose host callback never returns (gpu-check faults: `run --stall` must read the stacks and
name the module last executed). Prints two lines, then nothing: no output, no compile, no work."""

import time

import jax
import jax.numpy as jnp


def wait_forever(x):
    while True:
        time.sleep(3600)


@jax.jit
def warm_up(x):
    return x + 1.0


@jax.jit
def stuck_step(x):
    y = jnp.sin(x) * 2.0
    return jax.pure_callback(wait_forever, jax.ShapeDtypeStruct(y.shape, y.dtype), y)


x = jnp.ones(1024, jnp.float32)
print("warm", float(warm_up(x)[0]), flush=True)
print("entering the stuck step", flush=True)
stuck_step(x).block_until_ready()
