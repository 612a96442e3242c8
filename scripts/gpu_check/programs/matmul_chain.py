"""A chain of f32 matrix products with a tanh after each (the program of the perf checks of gpu-check).

GC_N (default 4096) is the matrices' size, GC_LINKS (8) the products per call: 2 * N**3 * LINKS flops a call.
The first GC_OBSERVED (5) calls are each waited for (a run times them: `--measure-calls 5`); then the program
times GC_OWN (10) more calls itself: how long a call takes to return without waiting (`enqueue_s`, the
median), and the ten calls waited for together (`synced_s`, per call). It prints them as one line,
`GC-OWN {json}`: what the run's own timings must be checked against, with the device allocator's peak bytes.
"""

import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

N = int(os.environ.get("GC_N", "4096"))
LINKS = int(os.environ.get("GC_LINKS", "8"))


@jax.jit
def chain(a, b):
    for _ in range(LINKS):
        a = jnp.tanh(a @ b)
    return a


def inputs():
    rng = np.random.RandomState(0)
    scale = np.float32(1.0 / np.sqrt(N))
    a = (rng.standard_normal((N, N)) * scale).astype(np.float32)
    b = (rng.standard_normal((N, N)) * scale).astype(np.float32)
    return jax.device_put(a), jax.device_put(b)


def main():
    observed, own = int(os.environ.get("GC_OBSERVED", "5")), int(os.environ.get("GC_OWN", "10"))
    a, b = inputs()
    for _ in range(observed):
        chain(a, b).block_until_ready()
    enqueue = []
    start = time.perf_counter()
    for _ in range(own):
        begun = time.perf_counter()
        out = chain(a, b)
        enqueue.append(time.perf_counter() - begun)
    out.block_until_ready()
    synced = (time.perf_counter() - start) / own
    numbers = {"n": N, "links": LINKS, "flops": 2.0 * N**3 * LINKS}
    numbers.update(enqueue_s=sorted(enqueue)[own // 2], synced_s=synced, backend=jax.default_backend())
    stats = jax.devices()[0].memory_stats() or {}  # the GPU allocator's; None on the CPU
    numbers["device_peak_bytes"] = stats.get("peak_bytes_in_use", 0)
    print("GC-OWN " + json.dumps(numbers), flush=True)


if __name__ == "__main__":
    main()
