"""jax.random: key splitting, normal, uniform, categorical and a permutation, under jit."""

import jax
import jax.numpy as jnp


@jax.jit
def sample(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    normal = jax.random.normal(k1, (32, 4))
    uniform = jax.random.uniform(k2, (16,), minval=-1.0, maxval=1.0)
    cats = jax.random.categorical(k3, jnp.log(jnp.array([0.1, 0.2, 0.7])), shape=(20,))
    return normal.mean(), uniform, cats, jax.random.permutation(k4, 10)


print(sample(jax.random.PRNGKey(42)))
