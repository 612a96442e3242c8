"""The deterministic mode of GPU work: the XLA flags that make a module's compile and results repeat on
the same GPU and jaxlib, so a verdict that compares compiles or outputs (packs and `repro run`, replay,
bisect steps, triage) compares the module, not two autotuning runs.

Why a mode at all (FIELD_NOTES §10, measured on an H200 with jaxlib 0.11.2): XLA's GPU compiler picks
kernels by timing them (autotuning), so three compiles of one module gave three optimised HLOs and three
sets of output bits; loading the dump's autotune results did not make them equal;
--xla_gpu_deterministic_ops made the outputs equal while the text still differed.

CANDIDATES is the one table of flag sets; scripts/gpu_check/determinism.py measures each on a GPU (three
compiles of the flax fixture's jit_step: distinct fingerprints and output digests). MODE is the default:
autotuning off (level 0: the compiler's heuristic choice, the same every time: the text repeats) plus
deterministic ops (no atomics-order races: the bits repeat), the only set that addresses both halves of
what was measured. Each flag is kept only where the target's jaxlib accepts it (the run side's flag table,
else one probe of the interpreter, cached); what is dropped is said in a note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xlatools.run.target import ProbedInterpreter

CANDIDATES: dict[str, tuple[str, ...]] = {
    "none": (),
    "deterministic_ops": ("--xla_gpu_deterministic_ops=true",),
    "autotune0": ("--xla_gpu_autotune_level=0",),
    "autotune0+deterministic_ops": ("--xla_gpu_autotune_level=0", "--xla_gpu_deterministic_ops=true"),
    "exclude_nondeterministic+autotune0": ("--xla_gpu_exclude_nondeterministic_ops=true", "--xla_gpu_autotune_level=0"),
}
MODE = "autotune0+deterministic_ops"
# Measured on the GPU only with a dump's autotune results (a file): --xla_gpu_load_autotune_results_from=PATH.
LOAD_AUTOTUNE = "--xla_gpu_load_autotune_results_from"
SOURCE = "deterministic mode"  # how manifests name where the flags came from


def mode_flags(mode: str = MODE) -> list[str]:
    return list(CANDIDATES[mode])


def applies(platform: str, target: ProbedInterpreter) -> bool:
    """Only a GPU compile needs it: --platform gpu, or auto on an interpreter that sees a GPU."""
    return str(platform) == "gpu" or (str(platform) == "auto" and target.has_gpu)


def gated(target: ProbedInterpreter, flags: list[str], own: list[str]) -> tuple[list[str], list[str]]:
    """(the mode's flags this target accepts and the user did not set, notes on what was left out)."""
    from xlatools.run.flag_probe import unknown_flags
    from xlatools.run.flags import flag_name

    mine = {flag_name(f) for f in own}
    wanted = {flag_name(f): f for f in flags if flag_name(f) not in mine}
    unknown, _ = unknown_flags(target, wanted) if wanted else ([], {})
    notes = [f"deterministic mode: jaxlib {target.jaxlib} does not know {wanted[name]}; left out" for name in unknown]
    return [flag for name, flag in wanted.items() if name not in unknown], notes
