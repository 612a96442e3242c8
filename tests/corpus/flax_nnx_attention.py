"""flax.nnx multi-head self-attention block with layer norm, forward pass under nnx.jit."""

import jax.numpy as jnp
import numpy as np
from flax import nnx


class Block(nnx.Module):
    def __init__(self, rngs):
        self.norm = nnx.LayerNorm(16, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=4, in_features=16, decode=False, rngs=rngs)

    def __call__(self, x):
        return x + self.attn(self.norm(x))


block = Block(nnx.Rngs(0))


@nnx.jit
def forward(block, x):
    return block(x)


x = jnp.asarray(np.random.RandomState(0).normal(size=(2, 8, 16)), jnp.float32)
print("out", float(forward(block, x).sum()))
