"""The numpy side of a replay, in the target interpreter: .npz files of arrays (ml_dtypes kinds stored as raw
ints, snapshot layouts undone), seeded made-up inputs, output digests, and outputs compared within tolerances.
Standalone: needs only numpy (ml_dtypes for its kinds); imported by replay_module.py and oracle_worker.py.
"""

import hashlib
import os


DTYPES_KEY = "__dtypes__"


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
    for i, name in enumerate(dtypes[: len(arrays)]):
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

    row = {
        "shape": list(actual.shape),
        "expected_shape": list(expected.shape),
        "dtype": str(actual.dtype),
        "expected_dtype": str(expected.dtype),
        "mismatches": 0,
        "max_abs_error": 0.0,
        "max_rel_error": 0.0,
        "nan_mismatches": 0,
    }
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
    row.update(
        mismatches=int(np.count_nonzero(bad)),
        nan_mismatches=int(np.count_nonzero(nan_bad)),
        max_abs_error=float(diff.max()) if diff.size else 0.0,
        max_rel_error=float(rel.max()) if rel.size else 0.0,
    )
    return row


def compare(actual, expected, atol, rtol):
    if len(actual) != len(expected):
        return {
            "ok": False,
            "message": "%d outputs, expected %d" % (len(actual), len(expected)),
            "outputs": [],
            "mismatches": 0,
            "elements": 0,
        }
    rows = [compare_one(a, e, atol, rtol) for a, e in zip(actual, expected)]
    total = sum(r["mismatches"] for r in rows)
    return {
        "ok": total == 0,
        "outputs": rows,
        "mismatches": total,
        "elements": int(sum(a.size for a in actual)),
        "nan_mismatches": sum(r["nan_mismatches"] for r in rows),
        "max_abs_error": max([r["max_abs_error"] for r in rows] + [0.0]),
        "max_rel_error": max([r["max_rel_error"] for r in rows] + [0.0]),
    }
