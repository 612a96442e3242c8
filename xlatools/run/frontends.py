"""XLA frontends a run can target: jax, TensorFlow, PyTorch/XLA.

They share XLA (so XLA_FLAGS, its dumps and its fatal abort on an unknown flag)
and differ in what surrounds it: which package carries XLA, which environment
picks the device, which extra flag variable they parse with XLA's parser
(TensorFlow's TF_XLA_FLAGS), and what a persistent cache would hide from a dump.
The frontend is explicit (`--frontend`, a profile's `run.frontend`) or detected
by the target probe (jax first, then torch_xla, then TensorFlow); a preset that
belongs to a frontend (tf-clustering) picks it where the target has it
(xlatools.run.frontend_checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xlatools.errors import UsageError

Frontend = Literal["jax", "tensorflow", "torch-xla"]
FRONTENDS: tuple[str, ...] = ("jax", "tensorflow", "torch-xla")
TF_XLA_FLAGS = "TF_XLA_FLAGS"


@dataclass(frozen=True)
class FrontendSpec:
    name: str
    label: str  # how messages name it, with its version after it
    install: str  # what to install in the target when it is missing
    flag_vars: tuple[str, ...]  # variables XLA's flag parser reads for it (each aborts on an unknown flag)
    uses_flag_table: bool  # the jaxlib flag table applies (other frontends carry their own XLA: always probe)


SPECS: dict[str, FrontendSpec] = {
    "jax": FrontendSpec("jax", "jaxlib", "jax jaxlib", ("XLA_FLAGS",), True),
    "tensorflow": FrontendSpec(
        "tensorflow", "tensorflow", "tensorflow-cpu (or tensorflow)", ("XLA_FLAGS", TF_XLA_FLAGS), False
    ),
    "torch-xla": FrontendSpec(
        "torch-xla", "torch_xla", "torch and torch_xla of the same version", ("XLA_FLAGS",), False
    ),
}


def check_frontend(name: str | None, where: str) -> str | None:
    if name is None or name in FRONTENDS:
        return name
    import difflib

    close = difflib.get_close_matches(name, FRONTENDS, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise UsageError(f"{where}: unknown frontend '{name}'", hint=f"{hint}known: {', '.join(FRONTENDS)}")


def jax_gpu_platforms(gpu_platform: str) -> str:
    """JAX_PLATFORMS for `--platform gpu`: the GPU first (the default backend), the CPU beside it, which host
    callbacks (jax.pure_callback, io_callback, debug.print) need: with the GPU alone they fail ("failed to find
    a local CPU device"), where the same program run by hand works (found on an H200, jax 0.11.2)."""
    return f"{gpu_platform},cpu"


def platform_env(frontend: str, platform: str, gpu_platform: str = "cuda") -> dict[str, str]:
    """Environment that pins the device kind for `--platform cpu|gpu` (nothing for auto)."""
    if platform == "auto":
        return {}
    gpu = platform == "gpu"
    if frontend == "jax":
        return {"JAX_PLATFORMS": jax_gpu_platforms(gpu_platform) if gpu else "cpu"}
    if frontend == "torch-xla":
        return {"PJRT_DEVICE": "CUDA" if gpu else "CPU"}
    # TensorFlow places ops on a GPU whenever it sees one; hiding them is the documented way to force the CPU.
    return {} if gpu else {"CUDA_VISIBLE_DEVICES": "-1"}


def dumping_env(frontend: str) -> dict[str, str | None]:
    """Caches beyond jax's (which the plan turns off for every dumping run) that would make a
    compilation a hit, and so dump nothing (None: remove the variable)."""
    return {"XLA_PERSISTENT_CACHE_PATH": None} if frontend == "torch-xla" else {}


def probe_env(frontend: str) -> dict[str, str]:
    """What the probe needs to start the frontend's XLA backend on the CPU."""
    return {
        "jax": {"JAX_PLATFORMS": "cpu"},
        "torch-xla": {"PJRT_DEVICE": "CPU"},
        "tensorflow": {"CUDA_VISIBLE_DEVICES": "-1"},
    }.get(frontend, {})
