"""jax.scipy: special functions, a normal log-pdf, logsumexp and a 1-D convolution."""

import jax
import jax.numpy as jnp
from jax.scipy import signal, special, stats


@jax.jit
def f(x):
    return (
        (special.erf(x) + special.gammaln(x + 2.0) + stats.norm.logpdf(x)).sum(),
        special.logsumexp(x),
        signal.convolve(x, jnp.array([0.25, 0.5, 0.25]), mode="same"),
    )


x = jnp.linspace(-2.0, 2.0, 32)
print([float(jnp.sum(o)) for o in f(x)])
