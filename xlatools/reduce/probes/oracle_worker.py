"""A long-lived worker in the target interpreter: parse checks and replays, one request per line.

Usage: python oracle_worker.py   (requests on stdin, one JSON object per line; one reply line each)
  {"op": "parse", "paths": [...]}   -> {"results": [{"ok": true} | {"ok": false, "error": "..."}]}
        every HLO text file parsed by this jaxlib's HLO parser (no compile, no run);
  {"op": "replay", "job": PATH}     -> {"done": true}
        the job run exactly as replay's replay_module.py runs it (it writes result.json);
  {"op": "compose", "sources": [[NPZ, I], ...], "out": NPZ} -> {"count": N}
        an .npz of arrays picked from others (a candidate's inputs: arguments and recorded values);
  {"op": "splats", "path": NPZ}     -> {"literals": [TEXT | null, ...]}
        per array: the HLO literal of its value when every element is the same, else null.
Importing jax once serves hundreds of candidates. Replies go to the original stdout;
everything else the process prints (jax, XLA) is sent to stderr. A crash ends the
process: the host sees the pipe close and records the crash with the job's phase.
Standalone: needs jax + numpy, and replay's probes folder (found beside this package).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "replay", "probes"))

import jaxcompat  # noqa: E402
import replay_arrays  # noqa: E402
import replay_module  # noqa: E402


def parse(paths):
    results = []
    for path in paths:
        try:
            with open(path) as handle:
                jaxcompat.proto_from_text(handle.read())
            results.append({"ok": True})
        except Exception as exc:  # the parser's message is the answer
            results.append({"ok": False, "error": replay_module.first_line(exc)})
    return {"results": results}


def literal(value):
    import numpy as np

    kind = value.dtype.kind
    if kind == "b":
        return "true" if bool(value) else "false"
    if kind in "iu":
        return str(int(value))
    if kind == "f" or value.dtype.name in ("bfloat16",) or value.dtype.name.startswith("float8"):
        number = float(value)
        if np.isnan(number):
            return "nan"
        if np.isinf(number):
            return "inf" if number > 0 else "-inf"
        return repr(number)
    return None


def splats(path):
    import numpy as np

    out = []
    for array in replay_arrays.load_arrays({"path": path}):
        flat = np.asarray(array).reshape(-1)
        same = flat.size > 0 and (np.all(flat == flat[0]) or (flat.dtype.kind == "f" and np.all(np.isnan(flat))))
        out.append(literal(flat[0]) if same else None)
    return {"literals": out}


def compose(sources, out, layouts=None):
    """An .npz of arrays picked from others: sources = [[NPZ, INDEX], ...] in parameter order.
    `layouts`: NPZ -> per-array minor_to_major, for files stored in layout order (snapshot literals)."""
    import numpy as np

    arrays, cache, whole = [], {}, {}
    for path, index in sources:
        if layouts and path in layouts:
            if path not in whole:
                whole[path] = replay_arrays.load_arrays({"path": path, "minor_to_major": layouts[path]})
            arrays.append(whole[path][index])
            continue
        if path not in cache:
            cache[path] = np.load(path, allow_pickle=False)
        data = cache[path]
        array = np.asarray(data["a%d" % index])
        if replay_arrays.DTYPES_KEY in data.files:
            name = str(data[replay_arrays.DTYPES_KEY][index])
            if name and array.dtype != replay_arrays.numpy_dtype(name):
                array = array.view(replay_arrays.numpy_dtype(name))
        arrays.append(array)
    for data in cache.values():
        data.close()
    replay_arrays.save_arrays(out, arrays)
    return {"count": len(arrays)}


def answer(request):
    if request["op"] == "parse":
        return parse(request["paths"])
    if request["op"] == "replay":
        replay_module.main(["replay_module.py", request["job"]])
        return {"done": True}
    if request["op"] == "compose":
        return compose(request["sources"], request["out"], request.get("layouts"))
    if request["op"] == "splats":
        return splats(request["path"])
    return {"error": "unknown op %r" % request["op"]}


def serve(replies):
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            reply = answer(request)
        except Exception as exc:  # a file it was pointed at that is missing or no .npz: said, not a dead worker
            reply = {"error": "%s: %s" % (type(exc).__name__, exc)}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main():
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever jax or XLA prints must not mix with the replies
    sys.stdout = sys.stderr
    try:
        import jax  # noqa: F401  (once, up front: the first request should not pay for it)
    except ImportError as exc:
        replies.write(json.dumps({"fatal": "jax/numpy not importable here: %s" % exc}) + "\n")
        replies.flush()
        return 3
    replies.write(json.dumps({"ready": True, "versions": replay_module.versions()}) + "\n")
    replies.flush()
    serve(replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
