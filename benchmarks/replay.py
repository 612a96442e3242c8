"""How much does `xlatools replay` cost over compiling and running the same module by hand?

The seed program (alpha * dot(x, y) + beta * z) is dumped once; then its jit_fn module
(before_optimizations text) is compiled and run 100 times on random inputs, by
`xlatools replay FILE --inputs random --iterations 100` and by one hand-written script
over jax's Python APIs (parse, convert, compile, 100 runs, fetch the result). The sides
alternate so machine noise hits both alike. Prints the medians and their ratio (goal <= 1.2).

--modules: what replaying many modules costs over one. A program of 7 small jit functions is dumped;
`xlatools replay DUMP` (7 modules) and `xlatools replay DUMP --module jit_f0` alternate, with replay's
long-lived workers and without them (XLATOOLS_REPLAY_WORKERS=0: a target process per module). Prints
both ratios (goal: 7 modules under 2x one module with workers).
Usage: python benchmarks/replay.py [--runs 7] [--iterations 100] [--python PATH] [--modules]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _bench import alternate, installed_env, report_ratio, timed

SEED = """
import jax, jax.numpy as jnp, numpy as np
alpha, beta = 2.0, 3.0
def fn(x, y, z):
    return alpha * jnp.dot(x, y) + beta * z
x = np.ones((2, 4, 3), np.float32); y = np.ones((3, 5), np.float32); z = np.ones((2, 4, 5), np.float32)
jax.jit(fn)(x, y, z).block_until_ready()
"""

# What a user writes without xlatools: the same steps replay_module.py takes, for this jaxlib only.
BY_HAND = """
import sys, time, numpy as np, jax
from jax._src.lib import xla_client as xc
from jax._src import xla_bridge
text = open(sys.argv[1]).read()
proto = xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
computation = xc.hlo.XlaComputation(proto)
mlir = xc._xla.mlir.hlo_to_stablehlo(proto)
backend = xla_bridge.get_backend()
device = backend.local_devices()[0]
executable = backend.compile_and_load(mlir, [device], xc.CompileOptions())
rng = np.random.RandomState(0)
args = [jax.device_put(rng.uniform(-1, 1, s.dimensions()).astype(s.numpy_dtype()), device)
        for s in computation.program_shape().parameter_shapes()]
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    out = executable.execute(args)
    out[0].block_until_ready()
    times.append(time.perf_counter() - t)
np.save(sys.argv[3], np.asarray(out[0]))
print(min(times), sorted(times)[len(times) // 2])
"""


SEVEN = """
import jax, jax.numpy as jnp, numpy as np
x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
fns = [lambda a: jnp.sin(a) + 1, lambda a: a @ a.T, lambda a: jnp.cumsum(a, axis=1), lambda a: jnp.tanh(a) * a,
       lambda a: jnp.exp(a).sum(axis=0), lambda a: jnp.sort(a, axis=1), lambda a: jnp.maximum(a, 0.25) - a.mean()]
for i, fn in enumerate(fns):
    fn.__name__ = f"f{i}"
    jax.jit(fn)(x).block_until_ready()
"""


def modules_ratio(python: str, runs: int, as_json: bool, env: dict[str, str], work: str) -> int:
    """7 modules against 1, with and without replay's workers (see the module docstring)."""
    import json

    dump = os.path.join(work, "dump7")
    Path(work, "seven.py").write_text(SEVEN)
    subprocess.run(
        [python, os.path.join(work, "seven.py")],
        check=True,
        env={**env, "XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_as_text"},
    )
    base = [
        sys.executable,
        "-m",
        "xlatools",
        "replay",
        dump,
        "--python",
        python,
        "--out",
        os.path.join(work, "artifacts"),
    ]
    timed(base + ["--module", "jit_f0"], env=env, cwd=work)  # warm-up: file caches and the target probe
    result = {}
    for mode, workers in (("before (a process per module)", "0"), ("after (workers)", "1")):
        mode_env = {**env, "XLATOOLS_REPLAY_WORKERS": workers}
        one, seven = alternate(base + ["--module", "jit_f0"], base, runs, env=mode_env, cwd=work)
        ratio = statistics.median(seven) / statistics.median(one)
        result[mode] = {
            "one_module_median_s": round(statistics.median(one), 3),
            "seven_modules_median_s": round(statistics.median(seven), 3),
            "ratio": round(ratio, 3),
        }
        if not as_json:
            print(
                f"{mode}: 1 module median {statistics.median(one):.2f} s, 7 modules median "
                f"{statistics.median(seven):.2f} s, ratio {ratio:.2f} (goal with workers < 2)"
            )
    if as_json:
        print(json.dumps({"runs": runs, **result}, indent=2))
    return 0


def dump_seed(python: str, work: str, env: dict[str, str]) -> Path:
    dump = os.path.join(work, "dump")
    seed = os.path.join(work, "seed.py")
    Path(seed).write_text(SEED)
    subprocess.run([python, seed], check=True, env={**env, "XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_as_text"})
    return next(Path(dump).glob("*jit_fn.before_optimizations.txt"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="alternating runs per side (at least 5)")
    parser.add_argument("--iterations", type=int, default=100, help="executions of the compiled module per run")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter with jax >= 0.5 (the by-hand script uses its APIs)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--modules", action="store_true", help="7 modules against 1, with and without workers")
    args = parser.parse_args()
    if args.runs < (3 if args.modules else 5):
        parser.error("--runs must be at least 5 (3 with --modules)")
    work = tempfile.mkdtemp(prefix="xlatools-bench-replay-")
    env = {
        **installed_env(),
        "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
        "NO_COLOR": "1",
        "XLATOOLS_CACHE_DIR": os.path.join(work, "cache"),
    }
    env.pop("XLA_FLAGS", None)
    if args.modules:
        try:
            return modules_ratio(args.python, args.runs, args.json, env, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    try:
        module = dump_seed(args.python, work, env)
        hand_script = os.path.join(work, "by_hand.py")
        Path(hand_script).write_text(BY_HAND)
        by_tool = [
            sys.executable,
            "-m",
            "xlatools",
            "replay",
            str(module),
            "--inputs",
            "random",
            "--iterations",
            str(args.iterations),
            "--python",
            args.python,
            "--out",
            os.path.join(work, "artifacts"),
        ]
        by_hand = [args.python, hand_script, str(module), str(args.iterations), os.path.join(work, "out.npy")]
        timed(by_tool, env=env, cwd=work)  # warm-up: file caches and the one-time target probe
        timed(by_hand, env=env, cwd=work)
        tool_times, hand_times, tool_cpu, hand_cpu = [], [], [], []
        for _ in range(args.runs):
            hand_times.append(timed(by_hand, env=env, cwd=work, cpu=hand_cpu))
            tool_times.append(timed(by_tool, env=env, cwd=work, cpu=tool_cpu))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cpu_ratio = round(statistics.median(tool_cpu) / statistics.median(hand_cpu), 3)
    if not args.json:
        print(
            f"CPU seconds (user+system, target included): median by hand {statistics.median(hand_cpu):.3f}, "
            f"xlatools {statistics.median(tool_cpu):.3f}, ratio {cpu_ratio:.3f}"
        )
    report_ratio(
        hand_times, tool_times, 1.2, args.json, module="jit_fn", iterations=args.iterations, cpu_ratio=cpu_ratio
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
