"""One jitted function compiled once, with jax's persistent compilation cache written whatever the compile
time (gpu-check perf: `explain-cache` must name why a later run missed it). The cache folder comes from
JAX_COMPILATION_CACHE_DIR (xlatools run --env ...)."""

import jax
import jax.numpy as jnp

jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


@jax.jit
def cached_step(x):
    return jnp.tanh(x @ x.T) * 2.0 + 1.0


x = jnp.ones((256, 256), jnp.float32)
print("cached_step", float(cached_step(x)[0, 0]), flush=True)
