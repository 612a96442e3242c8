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


def write_hlo(m, name, executable):
    """The optimised HLO text of the module XLA compiled (`executable.hlo_modules()`: about a millisecond for a
    small module, where converting jax's MLIR back to HLO text takes tens) into `<dir>/<pid>.hlo/`. Returns the
    file relative to the observer folder, or None."""
    try:
        text = executable.hlo_modules()[0].to_string()
    except Exception:
        return None
    folder = "%d.hlo" % os.getpid()
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in str(name))[:100]
    relative = "%s/%d.%s.txt" % (folder, m, safe)
    try:
        os.makedirs(os.path.join(obs.state["dir"], folder), exist_ok=True)
        with open(os.path.join(obs.state["dir"], relative), "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError:
        return None
    return relative
