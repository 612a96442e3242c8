"""FFTs: complex fft / ifft, rfft and a 2-D inverse transform."""

import jax
import jax.numpy as jnp


@jax.jit
def spectrum(x):
    c = jnp.fft.fft(x.astype(jnp.complex64))
    return jnp.abs(jnp.fft.ifft(c)), jnp.abs(jnp.fft.rfft(x)), jnp.real(jnp.fft.ifft2(jnp.outer(c, c)))


x = jnp.sin(jnp.linspace(0.0, 12.0, 64))
print([float(jnp.sum(o)) for o in spectrum(x)])
