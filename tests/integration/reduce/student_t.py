"""A real float64 program for the reduce tests: a robust-statistics summary under a Student-t model.

DF is a configuration constant; -1.0 is outside the distribution's domain, so every density
must be NaN. jaxlib 0.6.2 on CPU returns finite garbage instead (jax-ml/jax#29537: exp of a
constant-folded NaN); jaxlib 0.10.2 returns NaN. The module has 158 instructions before
optimisation, in 9 computations (reductions, a sort comparator, jax's nested calls)."""

import jax
import jax.numpy as jnp
import jax.scipy.stats as st
import numpy as np

jax.config.update("jax_enable_x64", True)
DF = -1.0


@jax.jit
def summary(x):
    z = (x - jnp.mean(x)) / jnp.std(x)
    return {
        "t_pdf": st.t.pdf(z, DF),
        "norm_logpdf": st.norm.logpdf(z),
        "cauchy_pdf": st.cauchy.pdf(z),
        "quantiles": jnp.sort(z)[jnp.array([0, 3, 7])],
    }


out = summary(np.linspace(-2.0, 3.0, 8))
for key, value in out.items():
    print(key, np.asarray(value))
