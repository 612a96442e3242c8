"""The built-in smoke programs. Each returns (jax result, NumPy reference).

Standalone (runs in the target interpreter, which has jax but maybe not xlatools).
Inputs come from a fixed seed, so every run compiles and computes the same thing.
"""

import numpy as np


def _rng():
    return np.random.RandomState(0)


def dot(jax, jnp):
    """alpha * dot(x, y) + beta * z, the classic jax_to_ir example."""
    rng = _rng()
    x = rng.randn(2, 4, 3).astype(np.float32)
    y = rng.randn(3, 2).astype(np.float32)
    z = rng.randn(2).astype(np.float32)

    def f(x, y, z, alpha=2.0, beta=3.0):
        return alpha * jnp.dot(x, y) + beta * z

    return jax.jit(f)(x, y, z), 2.0 * np.dot(x, y) + 3.0 * z


def matmul(jax, jnp):
    rng = _rng()
    a = rng.randn(64, 128).astype(np.float32)
    b = rng.randn(128, 32).astype(np.float32)
    return jax.jit(jnp.matmul)(a, b), a @ b


def conv(jax, jnp):
    """A 2-D convolution (NCHW, OIHW, stride 1, no padding) against a loop in NumPy."""
    rng = _rng()
    image = rng.randn(1, 3, 8, 8).astype(np.float32)
    kernel = rng.randn(4, 3, 3, 3).astype(np.float32)
    result = jax.jit(lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), "VALID"))(image, kernel)
    expected = np.zeros((1, 4, 6, 6), np.float32)
    for o in range(4):
        for i in range(6):
            for j in range(6):
                expected[0, o, i, j] = np.sum(image[0, :, i : i + 3, j : j + 3] * kernel[o])
    return result, expected


def reduce(jax, jnp):
    rng = _rng()
    x = rng.randn(16, 32).astype(np.float32)
    f = jax.jit(lambda x: jnp.stack([jnp.sum(x, axis=0), jnp.max(x, axis=0), jnp.mean(x, axis=0)]))
    return f(x), np.stack([x.sum(axis=0), x.max(axis=0), x.mean(axis=0)])


def while_(jax, jnp):
    """fori_loop and scan: sum_{i<10} i*x, and the running sum of x."""
    rng = _rng()
    x = rng.randn(8).astype(np.float32)

    def f(x):
        looped = jax.lax.fori_loop(0, 10, lambda i, acc: acc + i * x, jnp.zeros_like(x))
        _, running = jax.lax.scan(lambda carry, v: (carry + v, carry + v), jnp.float32(0), x)
        return jnp.concatenate([looped, running])

    return jax.jit(f)(x), np.concatenate([45.0 * x, np.cumsum(x)])


def grad(jax, jnp):
    """jax.grad through sin, mul, neg and add: d/dx sum(-(sin(x) * x) + x)."""
    x = np.linspace(-2.0, 2.0, 16).astype(np.float32)
    g = jax.jit(jax.grad(lambda x: jnp.sum(-(jnp.sin(x) * x) + x)))
    return g(x), -(np.cos(x) * x + np.sin(x)) + 1.0


def collectives(jax, jnp):
    """psum and all_gather over every local device (several CPU devices via XLA_FLAGS)."""
    n = jax.local_device_count()
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    f = jax.pmap(lambda v: (jax.lax.psum(v, "i"), jax.lax.all_gather(v, "i")), axis_name="i")
    summed, gathered = f(x)
    result = np.concatenate([np.asarray(summed).ravel(), np.asarray(gathered).ravel()])
    expected = np.concatenate([np.tile(x.sum(axis=0), n), np.tile(x.ravel(), n)])
    return result, expected


def multiprocess(jax, jnp):
    """psum, all_gather and ppermute (a ring shift) over every device of every process of a
    multi-process job (`xlatools run --processes N`; gloo on CPU), checked on this process's shards."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    try:
        from jax import shard_map
    except ImportError:  # jax < 0.7
        from jax.experimental.shard_map import shard_map
    if jax.process_count() < 2:
        raise RuntimeError("smoke:multiprocess needs several processes: run it with xlatools run --processes 2")
    devices = jax.devices()
    n = len(devices)
    mesh = Mesh(np.array(devices), ("i",))
    full = np.arange(n * 3, dtype=np.float32).reshape(n, 3) + 1.0
    mine = [jax.device_put(full[k : k + 1], d) for k, d in enumerate(devices) if d.process_index == jax.process_index()]
    x = jax.make_array_from_single_device_arrays((n, 3), NamedSharding(mesh, PartitionSpec("i")), mine)

    def body(v):
        ring = [(k, (k + 1) % n) for k in range(n)]
        return jax.lax.psum(v, "i"), jax.lax.all_gather(v, "i", tiled=True)[None], jax.lax.ppermute(v, "i", ring)

    spec = PartitionSpec("i")
    summed, gathered, shifted = jax.jit(shard_map(body, mesh=mesh, in_specs=spec, out_specs=(spec, spec, spec)))(x)
    result, expected = [], []
    for got, want in (
        (summed, lambda k: full.sum(axis=0, keepdims=True)),
        (gathered, lambda k: full[None]),
        (shifted, lambda k: full[(k - 1) % n][None]),
    ):
        for shard in sorted(got.addressable_shards, key=lambda s: s.index[0].start):
            result.append(np.asarray(shard.data).ravel())
            expected.append(np.asarray(want(shard.index[0].start)).ravel())
    return np.concatenate(result), np.concatenate(expected)


PROGRAMS = {
    "dot": dot,
    "matmul": matmul,
    "conv": conv,
    "reduce": reduce,
    "while": while_,
    "grad": grad,
    "collectives": collectives,
    "multiprocess": multiprocess,
}
