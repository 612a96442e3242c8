"""Compile and run one HLO module in the target interpreter, then compare its outputs.

Usage: python replay_module.py JOB.json
The job names the module (HLO text, serialized HloModuleProto or StableHLO), the
inputs (an .npz, or random/zeros/ones with a seed), the expected outputs to compare
with (.npz files), tolerances and iterations. Written into the job's out_dir:
`phase` (the step in progress: a crash leaves it behind), inputs.npz, outputs.npz,
optimized.txt (the compiled module's HLO), literals.txt and result.json.
Standalone: needs only jax + numpy (runs on jaxlib 0.4.30 ... 0.12.x) and its siblings here: jaxcompat.py
(what differs between jaxlibs) and replay_arrays.py (the arrays: .npz files, inputs, comparisons).
"""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jaxcompat  # noqa: E402
from replay_arrays import compare, digest, load_arrays, make_inputs, nonfinite, numpy_dtype, save_arrays  # noqa: E402


def write_atomic(path, data, binary=False):
    tmp = path + ".tmp"
    with open(tmp, "wb" if binary else "w") as handle:
        handle.write(data)
    os.replace(tmp, path)


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
        where = self.spec["module"]["path"].replace(os.sep, "/").split("/")[-2:]  # module_0000.jit_f/module.mlir
        if phase == name and module in "/".join(where):
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
                raise Failed(
                    "input-error", "the inputs do not fit the module: got %s, the module takes %s" % (got, want)
                )
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
                raise Failed(
                    "cannot-run",
                    "refused by design: a host callback of the module ran (jax.pure_callback, "
                    "io_callback, jax.debug.print or a debug callback), and the Python functions it calls live "
                    "only in the program that compiled it; run the program itself (xlatools run) to reproduce it",
                ) from None
            raise Failed("runtime-error", first_line(exc)) from None
        self.result["run_s"] = {
            "count": len(times),
            "min": round(min(times), 6),
            "median": round(statistics.median(times), 6),
            "first": round(times[0], 6),
        }
        return results

    def finish(self, arrays, outputs):
        self.phase("compare")
        save_arrays(self.path("outputs.npz"), outputs)
        self.result["outputs"] = [
            dict({"shape": list(o.shape), "dtype": str(o.dtype), "sha256": digest(o)}, **nonfinite(o)) for o in outputs
        ]
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

    return {
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", None),
        "python": "%d.%d.%d" % sys.version_info[:3],
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv))
