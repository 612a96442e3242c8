"""flax.linen MLP + optax adam: two jitted training steps (value_and_grad, optimiser update)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(32)(x))
        return nn.Dense(4)(x)


model = MLP()
x = jnp.asarray(np.random.RandomState(0).normal(size=(16, 8)), jnp.float32)
y = jnp.asarray(np.random.RandomState(1).normal(size=(16, 4)), jnp.float32)
params = model.init(jax.random.PRNGKey(0), x)
tx = optax.adam(1e-2)
opt_state = tx.init(params)


@jax.jit
def train_step(params, opt_state, x, y):
    def loss_fn(p):
        return jnp.mean((model.apply(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


for _ in range(2):
    params, opt_state, loss = train_step(params, opt_state, x, y)
print("loss", float(loss))
