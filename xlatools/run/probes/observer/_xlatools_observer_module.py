"""xlatools' observer, part 5 (of sitecustomize.py beside it): a compiled module's devices and HLO text.

Standalone, like sitecustomize.py: imports nothing of xlatools.
"""

import os

import _xlatools_observer_out as obs


def devices(array):
    """The devices a module was compiled for: ids (the first 64), kinds, process indices."""
    try:
        flat = list(array.flat) if hasattr(array, "flat") else list(array)
    except Exception:
        return None
    return {
        "n": len(flat),
        "ids": [getattr(d, "id", None) for d in flat[:64]],
        "kinds": sorted({str(getattr(d, "device_kind", "?")) for d in flat}),
        "processes": sorted({getattr(d, "process_index", 0) for d in flat}),
    }


def write_hlo(m, name, computation, executable):
    """The module's HLO text into `<dir>/<pid>.hlo/`: before optimisations (from the MLIR jax compiled), else
    after (from the executable). Returns (file relative to the observer folder, stage) or (None, None)."""
    text, stage = None, None
    try:
        from jax._src.interpreters import mlir
        from jax._src.lib import xla_client

        convert = xla_client._xla.mlir.mlir_module_to_xla_computation
        data = mlir.module_to_bytecode(computation)
        text = convert(data, use_tuple_args=False, return_tuple=False).as_hlo_text()
        stage = "before_optimizations"
    except Exception:
        try:
            text, stage = executable.hlo_modules()[0].to_string(), "after_optimizations"
        except Exception:
            return None, None
    folder = "%d.hlo" % os.getpid()
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in str(name))[:100]
    relative = "%s/%d.%s.txt" % (folder, m, safe)
    try:
        os.makedirs(os.path.join(obs.state["dir"], folder), exist_ok=True)
        with open(os.path.join(obs.state["dir"], relative), "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError:
        return None, None
    return relative, stage
