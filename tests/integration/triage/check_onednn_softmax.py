"""A check for `xlatools triage`: exit 1 when jax.nn.softmax over a length-3 axis does not sum to 1.

jaxlib 0.4.22 ... 0.4.26 on CPU rewrite the softmax into one `__onednn$softmax` call that returns all ones
(openxla/xla#11772, jax-ml/jax#20856); 0.4.21 and 0.4.27 on compute it."""

import sys

import jax
import jax.numpy as jnp
import numpy as np

x = jnp.array([[[1.2]], [[-1.1]], [[-0.26]]], dtype=jnp.float32)
out = np.asarray(jax.jit(lambda x: jax.nn.softmax(x, axis=0))(x)).ravel()
print(out)
sys.exit(0 if abs(float(out.sum()) - 1) < 1e-3 else 1)
