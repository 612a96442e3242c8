"""A check for `xlatools triage`: the robust-statistics summary of tests/integration/reduce/student_t.py,
exit 1 when its Student-t densities are not all NaN (DF = -1 is outside the domain: they must be NaN).

jaxlib 0.6.2 on CPU returns finite garbage there (jax-ml/jax#29537, exp of a constant-folded NaN);
0.6.1 and earlier return NaN."""
import sys

import jax
import jax.numpy as jnp
import jax.scipy.stats as st
import numpy as np

jax.config.update("jax_enable_x64", True)
DF = -1.0


@jax.jit
def summary(x):
    z = (x - jnp.mean(x)) / jnp.std(x)
    return {"t_pdf": st.t.pdf(z, DF), "norm_logpdf": st.norm.logpdf(z),
            "cauchy_pdf": st.cauchy.pdf(z), "quantiles": jnp.sort(z)[jnp.array([0, 3, 7])]}


out = summary(np.linspace(-2.0, 3.0, 8))
t_pdf = np.asarray(out["t_pdf"])
print("t_pdf", t_pdf)
sys.exit(0 if np.all(np.isnan(t_pdf)) else 1)
