"""jax.nn.softmax over a length-3 axis, jitted: jaxlib 0.4.26's oneDNN rewrite turns the whole softmax pattern
into one `__onednn$softmax` custom call that returns all ones on CPU (openxla/xla#11772, jax-ml/jax#20856)."""

import jax
import jax.numpy as jnp

x = jnp.array([[[1.2]], [[-1.1]], [[-0.26]]], dtype=jnp.float32)


def f(x):
    return jax.nn.softmax(x, axis=0)


print(jax.jit(f)(x).ravel())
