"""Narrow types: a bf16 matmul, an f16 elementwise chain and an int8 matmul accumulated in int32."""

import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.RandomState(0)


@jax.jit
def narrow(a, b, h, q, r):
    mixed = jnp.dot(a, b, preferred_element_type=jnp.float32)
    half = jnp.tanh(h * h + jnp.float16(0.5))
    quant = jax.lax.dot(q, r, preferred_element_type=jnp.int32)
    return mixed, half, quant


a = jnp.asarray(rng.normal(size=(8, 16)), jnp.bfloat16)
b = jnp.asarray(rng.normal(size=(16, 4)), jnp.bfloat16)
h = jnp.asarray(rng.normal(size=(32,)), jnp.float16)
q = jnp.asarray(rng.randint(-100, 100, size=(8, 16)), jnp.int8)
r = jnp.asarray(rng.randint(-100, 100, size=(16, 4)), jnp.int8)
print([np.asarray(o, np.float32).sum() for o in narrow(a, b, h, q, r)])
