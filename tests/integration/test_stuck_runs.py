"""Runs that stop moving, for real: every process's stacks are read before the run is stopped (run/hang/).

- Two processes of one jax job on CPU devices (jaxlib 0.10.2, gloo collectives): process 1 loops in its
  data loader at step 3 while process 0 waits in the all-gather; `--stall` ends the run, the summary names
  process 1 as the odd one out and process 0's collective.
- jaxlib 0.9.1's XLA:CPU fusion emitter compiles chained high-rank tensordots for minutes (openxla/xla#41173;
  XLATOOLS_SLOW_COMPILE_JAX_PYTHON): `--timeout` stops it mid-compile and the capture names the module and
  the part of XLA the compile is in.

Cost on 2 loaded cores: about 35-45 s each (the stall or timeout itself, 20-25 s, plus start-up and the
capture); nothing else runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import interpreter_from_env, require

STUCK = """\
import os, time
print("process", os.environ["JAX_PROCESS_ID"], "starting", flush=True)
import jax, jax.numpy as jnp
from jax.experimental import multihost_utils

jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                           process_id=int(os.environ["JAX_PROCESS_ID"]))
me = jax.process_index()

def next_batch(step):
    while me == 1 and step == 3:  # process 1's loader waits for a shard that never comes
        time.sleep(0.05)
    return jnp.full((4,), float(step + me))

for step in range(6):
    gathered = multihost_utils.process_allgather(next_batch(step))
    print(f"process {me} step {step}: {float(gathered.sum())}", flush=True)
"""

SLOW_COMPILE = """\
import numpy as np
import jax, jax.numpy as jnp

rng = np.random.default_rng(0)
legs = [jnp.asarray(rng.normal(size=(2, 2, 2)), jnp.float32) for _ in range(10)]
hubs = [jnp.asarray(rng.normal(size=(2, 2, 2, 2)), jnp.float32) for _ in range(10)]

def chain(legs, hubs):  # the rank grows by one per link: XLA:CPU 0.9.1's fusion emitter takes minutes
    out = legs[0]
    for leg, hub in zip(legs[1:], hubs):
        out = jnp.tensordot(out, leg, ((1,), (0,)))
        out = jnp.tensordot(out, hub, ((0, out.ndim - 1), (0, 1)))
    return jnp.sum(jnp.tanh(out))

print("compiling", flush=True)
print(jax.jit(chain)(legs, hubs))
"""


@pytest.fixture
def pystack():
    import shutil
    import sys

    found = (Path(sys.executable).parent / "pystack").is_file() or shutil.which("pystack")
    require("pystack", bool(found), "pip install pystack (a dependency of xlatools on Linux)")


def _left_running(marker: str) -> list[int]:
    """Processes whose command line mentions `marker` (the test's folder): none may outlive the run."""
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    left.append(int(entry.name))
            except OSError:
                continue
    return left


def test_a_stalled_two_process_job_names_the_process_not_in_the_collective(xl, pystack, tmp_path):
    (tmp_path / "stuck.py").write_text(STUCK)
    done = xl("run", "stuck.py", "--processes", "2", "--stall", "20", "--timeout", "240", "--json", timeout=400)
    assert done.returncode == 124, done.stderr[-3000:]
    data = json.loads(done.stdout)
    bundle, stuck = Path(data["bundle"]), data["stuck"]
    assert stuck["trigger"] == "stall" and "no progress for" in stuck["reason"]
    by_process = {p["process"]: p for p in stuck["processes"] if p["process"] is not None}
    zero, one = by_process[0], by_process[1]
    assert zero["state"] == "executing" and "AllGather" in zero["collective"], zero
    assert one["state"] == "python" and "next_batch" in one["where"] and one["collective"] is None, one
    assert stuck["odd"] == [one["pid"]]
    assert "process 1" in stuck["summary"] and "is not" in stuck["summary"] and "next_batch" in stuck["summary"]
    for process in (zero, one):  # one file per process: Python threads with locals, every thread's native frames
        text = (bundle / process["file"]).read_text()
        assert "== Python threads" in text and "== every thread" in text and "Traceback for thread" in text
    assert "gloo::" in (bundle / zero["file"]).read_text()
    summary = (bundle / "stacks" / "summary.txt").read_text()
    assert "<- odd one out" in summary and "stuck:" in done.stderr
    assert any("no progress for" in note for note in data["notes"])
    assert "process 0 step 2" in (bundle / "p0.stdout.log").read_text()
    assert "process 0 step 3" not in (bundle / "p0.stdout.log").read_text()
    assert stuck["seconds"] < 200  # bounded: each pystack call has its own timeout (60 s)
    assert _left_running(str(tmp_path)) == []


def test_a_compile_still_running_at_the_timeout_names_the_module_and_the_part_of_xla(xl, pystack, tmp_path):
    python = interpreter_from_env(
        "XLATOOLS_SLOW_COMPILE_JAX_PYTHON",
        "slow_compile_jax",
        "a Python with jax/jaxlib 0.9.1",
        "scripts/make-jax-venv.sh PATH 0.9.1",
    )
    (tmp_path / "chain.py").write_text(SLOW_COMPILE)
    done = xl("run", "chain.py", "--python", python, "--timeout", "25", "--json", timeout=300)
    assert done.returncode == 124, done.stderr[-3000:]
    data = json.loads(done.stdout)
    stuck = data["stuck"]
    assert stuck["trigger"] == "timeout" and stuck["reason"] == "timeout after 25 s"
    [process] = stuck["processes"]
    assert process["state"] == "compiling", process
    assert process["compiling"]["name"] == "jit_chain" and process["phase"] == "emitter"
    assert "SymbolicTileAnalysis" in process["where"] and "compiling jit_chain" in stuck["summary"]
    native = (Path(data["bundle"]) / process["file"]).read_text()
    assert "xla::cpu::CpuCompiler::RunBackend" in native and 'module_name: "jit_chain"' in native
    assert _left_running(str(tmp_path)) == []
