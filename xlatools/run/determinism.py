"""The deterministic GPU mode: the one place that says which flags make a GPU compile's outputs
repeatable. The `gpu:deterministic` preset reads them from here (presets/catalog.py).

Measured on an H200 (jax 0.11.2, FIELD_NOTES §10): with --xla_gpu_deterministic_ops=true two compiles
of one module gave bit-identical outputs (the optimised HLO text still differed: autotuning);
loading the dump's autotune results alone did not. What a verdict compares on the GPU is settled
with issue "Verdicts that hold on the GPU"; change the set here and every user follows.
"""

from __future__ import annotations

DETERMINISM_FLAGS: tuple[str, ...] = ("--xla_gpu_deterministic_ops=true",)
