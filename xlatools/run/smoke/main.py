"""Run built-in smoke programs and compare each with NumPy.

Usage: python main.py [--result OUT.json] NAME [NAME ...]
In a multi-process run (JAX_NUM_PROCESSES > 1, set by `xlatools run --processes N`) every process
first joins the job with jax.distributed.initialize.
Exit 0 when all match, 1 when any differs or fails (the message says which and by how much).
Standalone: runs in the target interpreter; uses the GPU when jax finds one.
"""

import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

RTOL = ATOL = 1e-4


def _compare(name, result, expected):
    import numpy as np

    result = np.asarray(result)
    expected = np.asarray(expected)
    if os.environ.get("XLATOOLS_SMOKE_INJECT_MISMATCH") == name:  # proves the check can fail
        expected = expected + 1.0
    if result.shape != expected.shape:
        return False, "shape %s, NumPy gives %s" % (result.shape, expected.shape), None
    error = float(np.max(np.abs(result - expected))) if result.size else 0.0
    if not np.allclose(result, expected, rtol=RTOL, atol=ATOL):
        return False, "max abs error %.3g exceeds tolerance (rtol=atol=%g)" % (error, RTOL), error
    return True, "", error


def main(argv):
    result_path = None
    if argv[:1] == ["--result"]:
        result_path, argv = argv[1], argv[2:]
    import jax
    import jax.numpy as jnp

    from programs import PROGRAMS

    processes = int(os.environ.get("JAX_NUM_PROCESSES") or 1)
    if processes > 1:  # one process of `xlatools run --processes N`: join the job first
        jax.distributed.initialize(num_processes=processes, process_id=int(os.environ["JAX_PROCESS_ID"]))
        print(
            "smoke: process %d of %d (coordinator %s)"
            % (jax.process_index(), jax.process_count(), os.environ.get("JAX_COORDINATOR_ADDRESS")),
            flush=True,
        )
    devices = jax.devices()
    print(
        "smoke: jax %s on %s (%d device%s: %s)"
        % (
            jax.__version__,
            jax.default_backend(),
            len(devices),
            "" if len(devices) == 1 else "s",
            devices[0].device_kind,
        ),
        flush=True,
    )
    results = []
    for name in argv:
        started = time.monotonic()
        entry = {"name": name, "backend": jax.default_backend(), "devices": jax.local_device_count()}
        try:
            with jax.default_matmul_precision("float32"):  # no TF32 on GPUs: compare at f32
                result, expected = PROGRAMS[name](jax, jnp)
            ok, why, error = _compare(name, result, expected)
            entry.update(ok=ok, max_abs_error=error, message=why)
        except Exception as exc:
            entry.update(ok=False, message="%s: %s" % (type(exc).__name__, exc))
            traceback.print_exc()
        entry["seconds"] = round(time.monotonic() - started, 3)
        results.append(entry)
        status = "ok" if entry["ok"] else "FAILED: " + entry["message"]
        print("smoke:%s %s (%.2f s)" % (name, status, entry["seconds"]), flush=True)
    if result_path:
        with open(result_path + ".tmp", "w") as handle:
            json.dump({"jax": jax.__version__, "results": results}, handle, indent=2)
        os.replace(result_path + ".tmp", result_path)
    failed = [r["name"] for r in results if not r["ok"]]
    if failed:
        print("smoke: %d of %d failed: %s" % (len(failed), len(results), ", ".join(failed)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
