"""jnp.linalg solve / eigh / svd / qr / cholesky: LAPACK-backed custom calls on the CPU."""

import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.RandomState(0)
a = rng.normal(size=(6, 6)).astype(np.float32)
spd = jnp.asarray(a @ a.T + 6 * np.eye(6, dtype=np.float32))
b = jnp.asarray(rng.normal(size=(6, 2)).astype(np.float32))


@jax.jit
def decompose(m, b):
    x = jnp.linalg.solve(m, b)
    w, v = jnp.linalg.eigh(m)
    s = jnp.linalg.svd(m, compute_uv=False)
    q, r = jnp.linalg.qr(m)
    c = jnp.linalg.cholesky(m)
    return x, w, jnp.abs(v).sum(), s, jnp.abs(r).sum() + jnp.abs(q).sum(), c


for out in decompose(spd, b):
    print(np.asarray(out).ravel()[:3])
