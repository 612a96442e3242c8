"""Four CPU devices: a shard_map with a psum over a 1-D mesh, and a pmap with an all-gather."""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

try:
    from jax import shard_map  # jax >= 0.7
except ImportError:
    from jax.experimental.shard_map import shard_map

mesh = Mesh(np.array(jax.devices()[:4]), ("d",))


@jax.jit
def sharded_sum(x):
    local = shard_map(lambda v: jax.lax.psum(jnp.sum(v * v, axis=0), "d"), mesh=mesh, in_specs=P("d"), out_specs=P())
    return local(x)


gathered = jax.pmap(lambda v: jax.lax.all_gather(v * 2.0, "i"), axis_name="i")(jnp.arange(8.0).reshape(4, 2))
print(sharded_sum(jnp.arange(32.0).reshape(8, 4)), gathered.shape)
