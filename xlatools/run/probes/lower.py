"""Lower (and compile) one function for given input shapes; write IR text, proto and costs.

Usage: python lower.py REQUEST.json ANSWER.json
Standalone: runs in the target interpreter (any jax from 0.4.30 on); no xlatools import.
The answer holds {"ok": true, ...} or {"ok": false, "kind": "usage"|"failure", "message": ...}.
"""

import functools
import importlib
import importlib.util
import inspect
import json
import os
import sys
import traceback


class Usage(Exception):
    """Bad input the target could only detect (no such function, ...)."""


def _load(request):
    sys.path[:0] = request.get("extra_sys_path", [])
    if request["source_kind"] == "file":
        path = request["source"]
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("_xlatools_lowered", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(request["source"])
        except ImportError as exc:
            raise Usage("cannot import module %r: %s" % (request["source"], exc)) from None
    target = module
    for part in request["function"].split("."):
        if not hasattr(target, part):
            raise Usage("%s has no function %r" % (request["source"], request["function"]))
        target = getattr(target, part)
    if not callable(target):
        raise Usage("%s:%s is not callable" % (request["source"], request["function"]))
    _check_arguments(target, request)
    return target


def _check_arguments(fn, request):
    """Every parameter without a default gets a value, every given name meets a parameter; checked
    here, where the signature is known, so the user reads which one instead of a TypeError."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable: let the call itself decide
        return
    params = signature.parameters
    label = "%s%s" % (request["function"], signature)
    inputs = [i["name"] for i in request["inputs"]]
    given = dict(
        [(name, "--input-shapes") for name in inputs] + [(name, "--constants") for name in request["constants"]]
    )
    kinds = inspect.Parameter
    missing = []
    for name, param in params.items():
        if param.kind == kinds.POSITIONAL_ONLY and name in given:
            raise Usage("parameter '%s' of %s is positional-only and cannot be given by name" % (name, label))
        if (
            param.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)
            and param.default is param.empty
            and name not in given
        ):
            missing.append(name)
    if missing:
        raise Usage(
            "%s: no value for %s; give each in --input-shapes (an array) or in --constants "
            "(a Python value)" % (label, ", ".join("'%s'" % m for m in missing))
        )
    if any(p.kind == kinds.VAR_KEYWORD for p in params.values()):
        return
    extra = [
        "'%s' (from %s)" % (name, option)
        for name, option in given.items()
        if name not in params or params[name].kind == kinds.VAR_POSITIONAL
    ]
    if extra:
        raise Usage("%s has no parameter named %s" % (label, ", ".join(extra)))


def _cost(compiled):
    try:
        cost = compiled.cost_analysis()
    except Exception:
        return None
    if isinstance(cost, (list, tuple)):  # jaxlib 0.4.x: one dict per partition
        cost = cost[0] if cost else None
    return {str(k): float(v) for k, v in (cost or {}).items()}


def _memory(compiled):
    try:
        stats = compiled.memory_analysis()
    except Exception:
        return None
    if stats is None:
        return None
    names = (
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "temp_size_in_bytes",
        "generated_code_size_in_bytes",
        "alias_size_in_bytes",
    )
    return {name: int(getattr(stats, name)) for name in names if hasattr(stats, name)}


def lower(request):
    import jax
    import numpy as np

    fn = _load(request)
    names = [i["name"] for i in request["inputs"]]
    structs = [
        jax.ShapeDtypeStruct(
            tuple(i["shape"]), np.dtype(i["dtype"]) if i["dtype"] != "bfloat16" else jax.numpy.bfloat16
        )
        for i in request["inputs"]
    ]
    constants = {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in request["constants"].items()}
    curried = functools.partial(fn, **constants)

    def by_name(*args):
        return curried(**dict(zip(names, args)))

    # The HLO module is named after this function: jit_<FUNCTION>, as the user expects.
    by_name.__name__ = by_name.__qualname__ = request["function"].split(".")[-1]

    answer = {"ok": True, "jax": jax.__version__, "backend": jax.default_backend()}
    fmt = request["ir_format"]
    if fmt == "jaxpr":
        text = str(jax.make_jaxpr(by_name)(*structs))
    else:
        lowered = jax.jit(by_name).lower(*structs)
        compiled = lowered.compile()
        answer["cost_analysis"] = _cost(compiled)
        answer["memory_analysis"] = _memory(compiled)
        if fmt == "stablehlo":
            text = lowered.as_text()
        elif request["optimized"]:
            text = compiled.as_text()
        else:
            text = lowered.as_text(dialect="hlo")
        if fmt == "hlo" and request.get("proto_out"):
            if request["optimized"]:
                proto = compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto()
            else:
                proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
            with open(request["proto_out"], "wb") as handle:
                handle.write(proto)
            answer["proto_bytes"] = len(proto)
    with open(request["text_out"], "w") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    return answer


def _print_user_traceback(exc):
    """The traceback of the user's code: frames of this script and of the import machinery are left out."""
    here = os.path.abspath(__file__)
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if os.path.abspath(frame.filename) != here and not frame.filename.startswith("<frozen importlib")
    ]
    text = "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(type(exc), exc))
    sys.stderr.write(("Traceback (most recent call last):\n" + text) if frames else text)


def main():
    request_path, answer_path = sys.argv[1], sys.argv[2]
    with open(request_path) as handle:
        request = json.load(handle)
    try:
        answer = lower(request)
    except Usage as exc:
        answer = {"ok": False, "kind": "usage", "message": str(exc)}
    except Exception as exc:
        _print_user_traceback(exc)
        answer = {"ok": False, "kind": "failure", "message": "%s: %s" % (type(exc).__name__, exc)}
    with open(answer_path, "w") as handle:
        json.dump(answer, handle)
    return 0 if answer["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
