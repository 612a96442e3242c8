"""xlatools' argument recorder in the program's interpreter (found on PYTHONPATH as `sitecustomize`).

Standalone: runs in the TARGET interpreter at start-up and imports nothing of xlatools, nor jax.
It takes its settings out of the environment (XLATOOLS_RECORD_DIR, XLATOOLS_RECORD_PYTHONPATH,
XLATOOLS_RECORD_MAX_BYTES), restores PYTHONPATH and waits for the program to import jax's
`pxla` module; then the first execution of every compiled module (per module name and argument
types) goes through a wrapper that copies the arguments to the host before the module runs (a
donated buffer is gone after it) and the results after it, and writes them with the optimised
module as an HloSnapshot (`e<N>.snapshot.pb`: the format XLA's --xla_dump_hlo_snapshots writes,
which the GPU backend does not), plus a line of `index.jsonl`. xlatools matches each to the
dump's module afterwards (run/recorder.py). Later executions take jax's fast path untouched.
Where it cannot record a module (several devices, effects tokens, mutable arrays, over the byte
budget) the line says why. Nothing here may stop the program: every failure becomes a line.
Works on jax 0.4.30 ... 0.12 (ExecuteReplicated.__call__ and kept_var_idx on all of them).
"""

import json
import os
import sys

_SETTINGS = ("XLATOOLS_RECORD_DIR", "XLATOOLS_RECORD_PYTHONPATH", "XLATOOLS_RECORD_MAX_BYTES")
_TARGET = "jax._src.interpreters.pxla"
# numpy dtype name -> (XLA PrimitiveType, LiteralProto field number, how the values are encoded)
_PRIMITIVES = {
    "bool": (1, 2, "varint"),
    "int8": (2, 15, "bytes"),
    "int16": (3, 17, "bytes"),
    "int32": (4, 4, "varint"),
    "int64": (5, 5, "varint"),
    "uint8": (6, 3, "bytes"),
    "uint16": (7, 16, "bytes"),
    "uint32": (8, 6, "varint"),
    "uint64": (9, 7, "varint"),
    "float16": (10, 11, "bytes"),
    "float32": (11, 8, "raw"),
    "float64": (12, 9, "raw"),
    "complex64": (15, 12, "raw"),
    "bfloat16": (16, 13, "bytes"),
    "complex128": (18, 18, "raw"),
    "float8_e5m2": (19, 19, "bytes"),
    "float8_e4m3fn": (20, 20, "bytes"),
}
_state = {"dir": None, "budget": 0, "count": 0, "seen": set(), "busy": False}


def _varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _shape(dtype_code, dims):
    layout = _field(1, b"".join(_varint(d) for d in reversed(range(len(dims))))) if dims else b""
    dimensions = _field(3, b"".join(_varint(d) for d in dims)) if dims else b""
    return _varint(2 << 3) + _varint(dtype_code) + dimensions + (_field(5, layout) if dims else _field(5, b""))


def _literal(array):
    """A LiteralProto of one array (C order, the default layout), encoded by hand: no protobuf needed here."""
    import numpy as np

    name = str(array.dtype)
    if name not in _PRIMITIVES:
        raise ValueError("an argument of type %s, which the recorder cannot write" % name)
    code, number, how = _PRIMITIVES[name]
    flat = np.ascontiguousarray(array).reshape(-1)
    if how == "varint":
        payload = b"".join(_varint(int(v)) for v in flat.tolist())
    else:
        payload = flat.astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
    return _field(1, _shape(code, list(array.shape))) + _field(number, payload)


def _tuple_literal(arrays):
    shape = _varint(2 << 3) + _varint(13)
    return _field(1, shape) + b"".join(_field(10, _literal(a)) for a in arrays)


def _host(value):
    import numpy as np

    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return np.asarray(value)
    from jax import dtypes

    return np.asarray(value, dtype=dtypes.canonicalize_dtype(np.result_type(value)))  # a Python scalar, as jax types it


def _why_not(call):
    if len(call._local_devices) > 1:
        return "it runs on %d devices (the recorder keeps single-device modules)" % len(call._local_devices)
    if getattr(call, "ordered_effects", None) or getattr(call, "has_unordered_effects", False):
        return "it has side effects (its parameters include effect tokens)"
    if getattr(call, "has_host_callbacks", False):
        return "it calls back into Python (host callbacks)"
    if getattr(call, "mut", None):
        return "it updates mutable arrays"
    return None


def _write(name, data):
    path = os.path.join(_state["dir"], name)
    try:
        with open(path + ".tmp", "wb") as handle:
            handle.write(data)
        os.replace(path + ".tmp", path)
    except BaseException:  # a full disk: no half-written file stays
        try:
            os.unlink(path + ".tmp")
        except OSError:
            pass
        raise


def _note(entry):
    with open(os.path.join(_state["dir"], "index.jsonl"), "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def _wrap(original):
    def __call__(self, *args):
        if _state["busy"]:
            return original(self, *args)
        _state["busy"] = True
        try:
            entry, before = _before(self, args)
        except Exception as exc:  # never the program's problem
            entry, before = (
                {"name": str(getattr(self, "name", "?")), "skipped": "%s: %s" % (type(exc).__name__, exc)},
                None,
            )
        finally:
            _state["busy"] = False
        out = original(self, *args)
        if entry is not None:
            try:
                _after(entry, before, self, out)
            except Exception as exc:
                entry.update(skipped="%s: %s" % (type(exc).__name__, exc))
                _note(entry)
        return out

    return __call__


def _before(call, args):
    kept = [a for i, a in enumerate(args) if i in call.kept_var_idx]
    # Cheap to compute on every call that takes this path (the module's text is read only for a new one).
    key = (str(call.name), tuple((tuple(getattr(a, "shape", ())), str(getattr(a, "dtype", type(a)))) for a in kept))
    if key in _state["seen"]:
        return None, None
    _state["seen"].add(key)
    module = call.xla_executable.hlo_modules()[0]
    _state["count"] += 1
    entry = {"n": _state["count"], "name": module.name}
    why = _why_not(call)
    if why:
        entry["skipped"] = why
        return entry, None
    arrays = [_host(a) for a in kept]
    size = sum(a.nbytes for a in arrays)
    if size > _state["budget"]:
        entry["skipped"] = "its arguments (%d bytes) exceed what is left of XLATOOLS_RECORD_MAX_BYTES" % size
        return entry, None
    _state["budget"] -= size
    return entry, (module, arrays)


def _after(entry, before, call, out):
    if before is None:
        _note(entry)
        return
    module, arrays = before
    results = [_host(o) for o in out]
    stem = "e%04d" % entry["n"]
    _write(stem + ".hlo.txt", module.to_string().encode())
    snapshot = (
        _field(1, _field(1, module.as_serialized_hlo_module_proto()))
        + b"".join(_field(2, _literal(a)) for a in arrays)
        + _field(3, _tuple_literal(results) if len(results) != 1 else _literal(results[0]))
        + _field(4, str(call._local_devices[0].platform).encode())
    )
    _write(stem + ".snapshot.pb", snapshot)
    entry.update(snapshot=stem + ".snapshot.pb", hlo=stem + ".hlo.txt", arguments=len(arrays), results=len(results))
    _note(entry)


def _patch(pxla):
    cls = getattr(pxla, "ExecuteReplicated", None)
    if cls is None or "__call__" not in dir(cls):  # the class that runs a compiled module, as jax has it
        _note({"skipped": "this jax has no pxla.ExecuteReplicated: nothing can be recorded"})
        return
    cls.__call__ = _wrap(cls.__call__)


class _AfterImport:
    """A meta-path finder that patches pxla once jax has loaded it (the program may never import jax)."""

    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            try:
                _patch(module)
            except Exception as exc:
                _note({"skipped": "the recorder could not hook jax (%s: %s)" % (type(exc).__name__, exc)})

        spec.loader.exec_module = exec_module
        return spec


def _main():
    settings = {name: os.environ.pop(name, None) for name in _SETTINGS}
    here = os.path.dirname(os.path.abspath(__file__))
    if settings["XLATOOLS_RECORD_PYTHONPATH"]:
        os.environ["PYTHONPATH"] = settings["XLATOOLS_RECORD_PYTHONPATH"]
    else:
        os.environ.pop("PYTHONPATH", None)
    if here in sys.path:
        sys.path.remove(here)
    if settings["XLATOOLS_RECORD_DIR"]:
        _state["dir"] = settings["XLATOOLS_RECORD_DIR"]
        _state["budget"] = int(settings["XLATOOLS_RECORD_MAX_BYTES"] or 1 << 30)
        sys.meta_path.insert(0, _AfterImport())
    me = sys.modules.pop("sitecustomize", None)  # the sitecustomize ours hides, as usual
    try:
        __import__("sitecustomize")
    except ImportError:
        sys.modules["sitecustomize"] = me


_main()
