"""Compile and run one HLO module in the target interpreter, then compare its outputs.

Usage: python replay_module.py JOB.json
The job names the module (HLO text, serialized HloModuleProto or StableHLO), the
inputs (an .npz, or random/zeros/ones with a seed), the expected outputs to compare
with (.npz files), tolerances and iterations. Written into the job's out_dir:
`phase` (the step in progress: a crash leaves it behind), inputs.npz, outputs.npz,
optimized.txt (the compiled module's HLO), literals.txt and result.json.
Standalone: needs only jax + numpy (runs on jaxlib 0.4.30 ... 0.12.x).
"""

import hashlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jaxcompat  # noqa: E402

DTYPES_KEY = "__dtypes__"


def write_atomic(path, data, binary=False):
    tmp = path + ".tmp"
    with open(tmp, "wb" if binary else "w") as handle:
        handle.write(data)
    os.replace(tmp, path)


def numpy_dtype(name):
    import numpy as np

    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def load_arrays(spec):
    """Arrays of an .npz in order; ml_dtypes kinds are stored as raw ints and viewed back; layouts undone."""
    import numpy as np

    with np.load(spec["path"], allow_pickle=False) as data:
        names = [n for n in data.files if n != DTYPES_KEY]
        if all(n.startswith("arr_") and n[4:].isdigit() for n in names):
            names.sort(key=lambda n: int(n[4:]))
        arrays = [np.asarray(data[n]) for n in names]
        dtypes = [str(d) for d in data[DTYPES_KEY]] if DTYPES_KEY in data.files else []
    for i, name in enumerate(dtypes[:len(arrays)]):
        if arrays[i].dtype != numpy_dtype(name):
            arrays[i] = arrays[i].view(numpy_dtype(name))
    for i, m2m in enumerate(spec.get("minor_to_major") or []):
        if m2m and i < len(arrays) and list(m2m) != sorted(m2m, reverse=True):
            major = list(reversed(m2m))  # the stored order: major to minor
            arrays[i] = np.transpose(arrays[i], [major.index(d) for d in range(len(major))])
    return arrays


def save_arrays(path, arrays):
    import numpy as np

    stored = {}
    for i, array in enumerate(arrays):
        plain = array.dtype.kind in "biufc"
        stored["a%d" % i] = array if plain else array.view("u%d" % array.dtype.itemsize)
    stored[DTYPES_KEY] = np.array([str(a.dtype) for a in arrays] or [""])
    np.savez(path + ".tmp.npz", **stored)
    os.replace(path + ".tmp.npz", path)


def make_inputs(mode, seed, shapes):
    """Seeded data: floats in [-1, 1), bools at random, integers in [0, smallest dimension) so that
    index-like parameters (gather, dynamic-slice starts) stay in range."""
    import numpy as np

    rng = np.random.RandomState(seed)  # the legacy generator: the same stream on every numpy
    dims = [d for shape, _ in shapes for d in shape if d > 1]
    high = max(1, min(dims + [100]))
    arrays = []
    for shape, dtype in shapes:
        dtype = np.dtype(dtype)
        if mode in ("zeros", "ones"):
            arrays.append((np.zeros if mode == "zeros" else np.ones)(shape, dtype))
        elif dtype.kind == "b":
            arrays.append(rng.randint(0, 2, size=shape).astype(dtype))
        elif dtype.kind in "iu":
            arrays.append(rng.randint(0, high, size=shape).astype(dtype))
        elif dtype.kind == "c":
            arrays.append((rng.uniform(-1, 1, size=shape) + 1j * rng.uniform(-1, 1, size=shape)).astype(dtype))
        else:
            arrays.append(rng.uniform(-1, 1, size=shape).astype(np.float32).astype(dtype))
    return arrays


def nonfinite(array):
    """How many NaN and Inf elements a floating or complex output holds."""
    import numpy as np

    if array.dtype.kind not in "fc":
        try:  # bfloat16 and the float8 types are numpy kind "V"
            array = array.astype(np.float32) if array.dtype.kind == "V" else None
        except (TypeError, ValueError):
            array = None
        if array is None:
            return {"nan": 0, "inf": 0}
    return {"nan": int(np.count_nonzero(np.isnan(array))), "inf": int(np.count_nonzero(np.isinf(array)))}


def digest(array):
    import numpy as np

    h = hashlib.sha256(("%s%s" % (array.dtype, list(array.shape))).encode())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def compare_one(actual, expected, atol, rtol):
    import numpy as np

    row = {"shape": list(actual.shape), "expected_shape": list(expected.shape), "dtype": str(actual.dtype),
           "expected_dtype": str(expected.dtype), "mismatches": 0, "max_abs_error": 0.0, "max_rel_error": 0.0,
           "nan_mismatches": 0}
    if actual.shape != expected.shape:
        row.update(mismatches=int(max(actual.size, expected.size)), message="shape differs")
        return row
    if actual.dtype.kind in "biu" and expected.dtype.kind in "biu":
        row["mismatches"] = int(np.count_nonzero(actual != expected))  # exact for integers and bools
        return row
    wide = np.complex128 if "c" in (actual.dtype.kind, expected.dtype.kind) else np.float64
    a, e = actual.astype(wide), expected.astype(wide)
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    nan_bad = a_nan != e_nan
    finite = np.isfinite(a) & np.isfinite(e)
    diff = np.where(finite, np.abs(a - e), 0.0)
    bad = nan_bad | (finite & (diff > atol + rtol * np.abs(np.where(finite, e, 0.0))))
    bad |= ~a_nan & ~e_nan & ~finite & (a != e)  # infinities must agree exactly
    scale = np.abs(np.where(finite, e, 1.0))
    rel = np.where(finite & (scale > 0), diff / np.where(scale > 0, scale, 1.0), 0.0)
    row.update(mismatches=int(np.count_nonzero(bad)), nan_mismatches=int(np.count_nonzero(nan_bad)),
               max_abs_error=float(diff.max()) if diff.size else 0.0, max_rel_error=float(rel.max()) if rel.size else 0.0)
    return row


def compare(actual, expected, atol, rtol):
    if len(actual) != len(expected):
        return {"ok": False, "message": "%d outputs, expected %d" % (len(actual), len(expected)), "outputs": [],
                "mismatches": 0, "elements": 0}
    rows = [compare_one(a, e, atol, rtol) for a, e in zip(actual, expected)]
    total = sum(r["mismatches"] for r in rows)
    return {"ok": total == 0, "outputs": rows, "mismatches": total, "elements": int(sum(a.size for a in actual)),
            "nan_mismatches": sum(r["nan_mismatches"] for r in rows),
            "max_abs_error": max([r["max_abs_error"] for r in rows] + [0.0]),
            "max_rel_error": max([r["max_rel_error"] for r in rows] + [0.0])}


class Failed(Exception):
    def __init__(self, failure, message):
        super().__init__(message)
        self.failure, self.message = failure, message


class Job:
    def __init__(self, path):
        with open(path) as handle:
            self.spec = json.load(handle)
        self.out = self.spec["out_dir"]
        self.result = {"phase": "start", "failure": None}
        self.callbacks = 0

    def path(self, name):
        return os.path.join(self.out, name)

    def phase(self, name):
        self.result["phase"] = name
        write_atomic(self.path("phase"), name)
        inject = os.environ.get("XLATOOLS_REPLAY_INJECT_ABORT", "")  # lets tests prove crash handling on any jaxlib
        phase, _, module = inject.partition(":")  # PHASE, or PHASE:TEXT for modules whose file name has TEXT
        if phase == name and module in os.path.basename(self.spec["module"]["path"]):
            os.abort()

    def load_module(self):
        self.phase("load")
        errors = []
        for source in [self.spec["module"]] + self.spec.get("alternatives", []):
            mode = "rb" if source["kind"] == "proto" else "r"
            with open(source["path"], mode) as handle:
                payload = handle.read()
            try:
                computation, mlir, how = jaxcompat.load(source["kind"], payload)
                self.result["loaded_from"] = {"kind": source["kind"], "path": source["path"], "how": how}
                # As text too: an older jaxlib that cannot read this jaxlib's proto may parse the text.
                text = computation.as_hlo_text(print_large_constants=True)
                write_atomic(self.path("module.txt"), text)
                self.callbacks = jaxcompat.callback_count(text)
                return computation, mlir
            except Exception as exc:
                errors.append("%s: %s" % (source["kind"], whole_message(exc)))
        raise Failed("compile-error", "cannot load the module: " + "\n".join(errors))

    def inputs(self, computation):
        self.phase("inputs")
        shapes = jaxcompat.parameter_shapes(computation)
        spec = self.spec["inputs"]
        if spec["mode"] == "file":
            arrays = load_arrays(spec)
            got = [(tuple(a.shape), str(a.dtype)) for a in arrays]
            want = [(tuple(s), str(numpy_dtype(d))) for s, d in shapes]
            if got != want:
                raise Failed("input-error", "the inputs do not fit the module: got %s, the module takes %s" % (got, want))
        else:
            arrays = make_inputs(spec["mode"], spec.get("seed", 0), shapes)
        save_arrays(self.path("inputs.npz"), arrays)
        return arrays

    def compile(self, mlir):
        self.phase("compile")
        client = jaxcompat.backend()
        started = time.perf_counter()
        try:
            overrides = self.spec.get("compile_options") or {}
            try:
                executable = jaxcompat.compile_mlir(client, mlir, self.callbacks, overrides)
            except Exception as exc:
                if not overrides or not any(name in str(exc) for name in overrides):
                    raise
                # an option this jaxlib does not know: compile with its defaults, and say so
                executable = jaxcompat.compile_mlir(client, mlir, self.callbacks)
                self.result["options_dropped"] = first_line(exc)
                overrides = {}
            if overrides:
                self.result["compile_options"] = dict(overrides)
        except Exception as exc:
            raise Failed("compile-error", first_line(exc)) from None
        self.result["compile_s"] = round(time.perf_counter() - started, 6)
        text = jaxcompat.optimized_text(executable)
        write_atomic(self.path("optimized.txt"), text)
        device = client.local_devices()[0]
        self.result["device"] = {"platform": device.platform, "kind": getattr(device, "device_kind", "")}
        return executable, device

    def run(self, executable, device, arrays):
        import jax
        import numpy as np

        self.phase("run")
        times, outputs = [], None
        donates = "input_output_alias" in jaxcompat.optimized_text(executable)
        buffers = [jax.device_put(a, device) for a in arrays]
        try:
            for _ in range(max(1, self.spec.get("iterations", 1))):
                if donates and outputs is not None:
                    buffers = [jax.device_put(a, device) for a in arrays]
                started = time.perf_counter()
                outputs = executable.execute(buffers)
                for out in outputs:
                    out.block_until_ready()
                times.append(time.perf_counter() - started)
            results = [np.asarray(o) for o in outputs]
        except Exception as exc:
            if jaxcompat.CALLBACK_RAN in str(exc):
                raise Failed("cannot-run", "refused by design: a host callback of the module ran (jax.pure_callback, "
                             "io_callback, jax.debug.print or a debug callback), and the Python functions it calls live "
                             "only in the program that compiled it; run the program itself (xlatools run) to reproduce it") from None
            raise Failed("runtime-error", first_line(exc)) from None
        self.result["run_s"] = {"count": len(times), "min": round(min(times), 6),
                                "median": round(statistics.median(times), 6), "first": round(times[0], 6)}
        return results

    def finish(self, arrays, outputs):
        self.phase("compare")
        save_arrays(self.path("outputs.npz"), outputs)
        self.result["outputs"] = [dict({"shape": list(o.shape), "dtype": str(o.dtype), "sha256": digest(o)}, **nonfinite(o))
                                  for o in outputs]
        comparisons = []
        for expected in self.spec.get("expected", []):
            other = load_arrays(expected)
            if expected.get("role") == "reference":  # the file holds the test's outputs; ours are the reference
                entry = compare(other, outputs, self.spec["atol"], self.spec["rtol"])
            else:
                entry = compare(outputs, other, self.spec["atol"], self.spec["rtol"])
            entry["against"] = expected["label"]
            comparisons.append(entry)
        self.result["comparisons"] = comparisons
        if self.spec.get("print_literals"):
            write_literals(self.path("literals.txt"), arrays, outputs)


def first_line(exc):
    text = str(exc).strip() or type(exc).__name__
    return "%s: %s" % (type(exc).__name__, text.splitlines()[0][:2000])


def whole_message(exc, limit=4000):
    """The exception's every line: a parser's error names the line, the column and what it expected, with the
    text and a caret on the lines after its first ("Syntax error when trying to parse the text as a HloModule:")."""
    text = str(exc).strip() or type(exc).__name__
    return "%s: %s" % (type(exc).__name__, text if len(text) <= limit else text[:limit] + " [...]")


def write_literals(path, arrays, outputs):
    import numpy as np

    lines = []
    for label, group in (("input", arrays), ("output", outputs)):
        for i, array in enumerate(group):
            body = np.array2string(array, threshold=24, edgeitems=3, max_line_width=120)
            lines.append("%s %d: %s%s\n%s" % (label, i, array.dtype, list(array.shape), body))
    write_atomic(path, "\n".join(lines) + "\n")


def main(argv):
    job = Job(argv[1])
    try:
        try:
            import jax
            import numpy  # noqa: F401
        except ImportError as exc:
            raise Failed("cannot-run", "jax/numpy not importable here: %s" % exc) from None
        # 64-bit inputs must reach the module as they are: with x64 off, device_put makes them 32-bit.
        jax.config.update("jax_enable_x64", True)
        job.result["versions"] = versions()
        jaxcompat.prepare_runtime()
        computation, mlir = job.load_module()
        arrays = job.inputs(computation)
        executable, device = job.compile(mlir)
        outputs = job.run(executable, device, arrays)
        job.finish(arrays, outputs)
    except Failed as failed:
        job.result.update(failure=failed.failure, message=failed.message)
        sys.stderr.write("replay: %s during %s: %s\n" % (failed.failure, job.result["phase"], failed.message))
    write_atomic(job.path("result.json"), json.dumps(job.result, indent=1))
    return 0


def versions():
    import jax
    import jaxlib

    return {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", None),
            "python": "%d.%d.%d" % sys.version_info[:3]}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
