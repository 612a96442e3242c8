"""Sorting: sort, argsort (stable), top_k and a sort-based median."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def ranks(x):
    values, idx = jax.lax.top_k(x, 5)
    return jnp.sort(x), jnp.argsort(x, stable=True), values, idx, jnp.median(x)


x = jnp.asarray(np.random.RandomState(0).permutation(200).astype(np.float32))
print([np.asarray(o).ravel()[:3] for o in ranks(x)])
