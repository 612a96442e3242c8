"""A small flax.linen CNN trained one optax adam step at a time (the program of the GPU fixtures).

Two convolutions, average pooling, two dense layers, 8 random 28x28 images: f32 dots and convolutions,
which a GPU runs in TF32 unless asked for full precision. Prints the loss of each step.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(features=16, kernel_size=(3, 3))(x))
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(features=32, kernel_size=(3, 3))(x))
        x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.relu(nn.Dense(features=64)(x))
        return nn.Dense(features=10)(x)


rng = np.random.RandomState(0)
images = jnp.asarray(rng.normal(size=(8, 28, 28, 1)), jnp.float32)
labels = jnp.asarray(rng.randint(0, 10, size=(8,)), jnp.int32)
model = CNN()
params = model.init(jax.random.PRNGKey(0), images)
tx = optax.adam(1e-3)
opt_state = tx.init(params)


@jax.jit
def step(params, opt_state, images, labels):
    def loss_fn(p):
        logits = model.apply(p, images)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


for i in range(2):
    params, opt_state, loss = step(params, opt_state, images, labels)
    print(f"step {i} loss {float(loss):.6f}")
