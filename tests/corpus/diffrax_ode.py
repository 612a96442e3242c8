"""equinox MLP as the vector field of a neural ODE, solved with diffrax (Tsit5, adaptive steps),
and the gradient of a loss through the solve (a while loop with checkpointing)."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

field = eqx.nn.MLP(2, 2, 16, 2, activation=jnp.tanh, key=jax.random.PRNGKey(0))


def solve(field, y0):
    term = diffrax.ODETerm(lambda t, y, args: field(y))
    sol = diffrax.diffeqsolve(
        term,
        diffrax.Tsit5(),
        t0=0.0,
        t1=1.0,
        dt0=0.1,
        y0=y0,
        stepsize_controller=diffrax.PIDController(rtol=1e-4, atol=1e-6),
        saveat=diffrax.SaveAt(t1=True),
    )
    return sol.ys[-1]


@eqx.filter_jit
def loss(field, y0):
    return jnp.sum(solve(field, y0) ** 2)


y0 = jnp.array([1.0, -0.5])
print("loss", float(loss(field, y0)))
grads = eqx.filter_jit(eqx.filter_grad(loss))(field, y0)
print("grad", float(sum(jnp.sum(g) for g in jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_array)))))
