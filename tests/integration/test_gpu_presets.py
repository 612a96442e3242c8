"""The GPU presets (presets/gpu.yaml): their variables and flags reach the program, and every jaxlib we
test accepts the flags (a CPU jaxlib parses --xla_gpu_* flags too, and aborts on one it does not know).
No GPU here: what each library then writes is checked by scripts/gpu_check/operations.py on a lent one.

Cost: one short run per jaxlib (0.10.2 here, 0.4.30 and 0.12 when their interpreters are built), about 5 s each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlatools.run.determinism import mode_flags

# deterministic before autotune: the mode turns autotuning off, the autotune preset (later) sets its level again.
GPU_PRESETS = (
    "nccl",
    "cudnn-log",
    "cublas-log",
    "deterministic",
    "autotune",
    "f32",
    "no-cuda-graphs",
    "sync-launch",
    "exact-alloc",
)
VARIABLES = (
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_DEBUG_FILE",
    "CUDNN_LOGLEVEL_DBG",
    "CUDNN_LOGDEST_DBG",
    "CUBLAS_LOGINFO_DBG",
    "CUBLAS_LOGDEST_DBG",
    "CUBLASLT_LOG_LEVEL",
    "CUBLASLT_LOG_FILE",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "NVIDIA_TF32_OVERRIDE",
    "CUDA_LAUNCH_BLOCKING",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_FLAGS",
)
PROGRAM = f"""\
import json, os, sys
import jax, jax.numpy as jnp
out = jax.jit(lambda x: x @ x)(jnp.ones((4, 4)))  # XLA reads XLA_FLAGS when the backend starts
json.dump({{name: os.environ.get(name) for name in {VARIABLES!r}}}, open(sys.argv[1], "w"))
print("sum", float(out.sum()))
"""


@pytest.mark.parametrize("which", ["0.10.2", "0.4.30", "0.12"])
def test_gpu_presets_reach_the_program_and_every_jaxlib_accepts_them(xl, tmp_path, request, which):
    python = {"0.10.2": "jax_python", "0.4.30": "old_jax_python", "0.12": "new_jax_python"}[which]
    (tmp_path / "probe.py").write_text(PROGRAM)
    presets = [arg for name in GPU_PRESETS for arg in ("--preset", f"gpu:{name}")]
    done = xl(
        "run",
        "probe.py",
        "seen.json",
        "--python",
        request.getfixturevalue(python),
        "--platform",
        "cpu",
        *presets,
        "--out",
        "runs",
        "--json",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    bundle = Path(data["bundle"])
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["NCCL_DEBUG"] == "INFO" and seen["NCCL_DEBUG_FILE"] == f"{bundle}/nccl/%h.%p.log"
    assert (bundle / "nccl").is_dir()  # NCCL makes the file, not the folder
    assert (seen["CUDNN_LOGLEVEL_DBG"], seen["CUDNN_LOGDEST_DBG"]) == ("3", f"{bundle}/cudnn.log")
    assert (seen["CUBLAS_LOGINFO_DBG"], seen["CUBLASLT_LOG_LEVEL"]) == ("1", "2")
    assert (seen["JAX_DEFAULT_MATMUL_PRECISION"], seen["NVIDIA_TF32_OVERRIDE"]) == ("float32", "0")
    assert (seen["CUDA_LAUNCH_BLOCKING"], seen["XLA_PYTHON_CLIENT_ALLOCATOR"]) == ("1", "platform")
    flags = seen["XLA_FLAGS"].split()
    mode = [f for f in mode_flags() if not f.startswith("--xla_gpu_autotune_level=")]
    for flag in (
        "--xla_gpu_autotune_level=4",
        f"--xla_gpu_dump_autotune_results_to={bundle}/autotune_results.pbtxt",
        "--xla_gpu_enable_command_buffer=",
        *mode,
    ):
        assert flag in flags, (flag, flags)
    assert [p["name"] for p in data["presets"] if p["kind"] == "gpu"] == list(GPU_PRESETS)
    assert "xla_force_host_platform_device_count" not in seen["XLA_FLAGS"]


def test_a_multi_process_run_gives_each_process_its_own_gpu_logs(xl):
    plan = json.loads(
        xl(
            "run", "smoke:multiprocess", "--preset", "gpu:nccl", "--preset", "gpu:autotune", "--dry-run", "--json"
        ).stdout
    )["plan"]
    for process in plan["processes"]:
        i = process["env"]["JAX_PROCESS_ID"]
        assert process["env"]["NCCL_DEBUG_FILE"] == f"{{bundle}}/nccl/p{i}/%h.%p.log"
        assert f"--xla_gpu_dump_autotune_results_to={{bundle}}/p{i}.autotune_results.pbtxt" in process["xla_flags"]
