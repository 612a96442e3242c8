"""The program of the compile-recording benchmark (benchmarks/compile_record_overhead.py): 40 small jitted
functions compiled once each, 5 of them again with another shape, every one called 20 times, with jax's
persistent compilation cache as XLATOOLS_BENCH_CACHE says: `off` (no cache folder), `cold` (a new empty folder:
every compile a miss, written), `warm` (JAX_COMPILATION_CACHE_DIR, filled by an earlier run: every compile a hit)."""

import os
import shutil
import tempfile

import jax
import jax.numpy as jnp


def make(k):
    return jax.jit(lambda x: jnp.tanh(x @ x.T * (1.0 + k / 100.0)).sum(axis=0) + k)


if __name__ == "__main__":
    mode = os.environ.get("XLATOOLS_BENCH_CACHE", "off")
    folder = tempfile.mkdtemp(prefix="bench-cache-") if mode == "cold" else None
    if folder:
        jax.config.update("jax_compilation_cache_dir", folder)
    if mode != "off":
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    functions = [make(k) for k in range(40)]
    total = 0.0
    for shape in ((16, 16), (8, 16)):
        x = jnp.ones(shape)
        for f in functions[: 40 if shape == (16, 16) else 5]:
            for _ in range(20):
                total += float(f(x)[0])
    print(total)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
