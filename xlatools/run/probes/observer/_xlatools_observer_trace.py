"""xlatools' observer, part 3 (of sitecustomize.py beside it): jit traces and recompiles.

Standalone, like sitecustomize.py: imports nothing of xlatools. jax's entry for a call of a jitted function
that does not take the C++ fast path is `pjit._infer_params` (0.4.30: `(jit_info, args, kwargs)`; newer:
`(fun, jit_info, args, kwargs)`); a trace happens inside it (`pjit._trace_for_jit` on newer jax; on 0.4.30 the
trace's `/jax/core/compile/jaxpr_trace_duration` monitoring event). For each trace of a top-level call this
writes a `trace` event: the function (a `function` event the first time), the argument signature (shapes,
dtypes, weak types, shardings, static arguments), the program's line that called it; and it links the next
compile of that function's module to the call. With XLATOOLS_OBSERVE_EXPLAIN=1 every compile of a function
compiled before in this process is printed on stderr as it happens, with what changed.
"""

import itertools
import os
import re
import sys
import time
import weakref

import _xlatools_observer_out as obs

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
_NAME = re.compile(r"[^\w.\-]")
functions = {}  # (qualname, file, line) -> Function
by_number = {}  # f -> Function
_numbers = itertools.count(1)  # functions of this process
_traces = itertools.count(1)  # traces of this process
_calls = itertools.count(1)  # jit calls of this process that went through Python
_skip = []  # folders whose frames are not the program's (jax, jaxlib, the observer)
settings = {"explain": False, "record": True, "printed": 0}


class Function:
    """One jitted Python function (by its code's place), its function objects, traces and compiles."""

    __slots__ = ("f", "name", "internal", "objects", "made", "compiles", "last", "calls", "modules")

    def __init__(self, f, name, internal):
        self.f, self.name, self.internal, self.compiles, self.last = f, name, internal, 0, None
        self.objects, self.made = {}, 0  # number -> weak reference of the function objects alive, how many seen
        self.calls = set()  # the calls that compiled (one call under jax.grad compiles two modules)
        bare = _NAME.sub("_", name)  # its module's name as jax makes it: jit_f; jit__lambda_ (0.4.x), jit__lambda
        self.modules = {api + "_" + bare for api in ("jit", "pmap")}
        self.modules |= {_NAME.sub("_", "%s(%s)" % (api, name)).rstrip("_") for api in ("jit", "pmap")}


def _underlying(fun):
    seen = 0
    while seen < 8 and not hasattr(fun, "__code__"):
        inner = getattr(fun, "func", None) or getattr(fun, "__wrapped__", None)
        if inner is None:
            break
        fun, seen = inner, seen + 1
    return fun


def function_of(fun):
    """The Function of `fun` (a `function` event the first time its code's place is seen)."""
    base = _underlying(fun)
    code = getattr(base, "__code__", None)
    name = getattr(fun, "__name__", None) or getattr(base, "__name__", None) or type(fun).__name__
    qualname = getattr(base, "__qualname__", name)
    where = (code.co_filename, code.co_firstlineno) if code is not None else (None, None)
    key = (qualname,) + where
    found = functions.get(key)
    if found is None:
        internal = bool(where[0]) and _outside_program(where[0])
        found = functions[key] = Function(next(_numbers), str(name), internal)
        by_number[found.f] = found
        obs.event(
            "function", f=found.f, name=found.name, qualname=qualname, file=where[0], line=where[1], internal=internal
        )
    return found


def _object_number(function, fun):
    """Which function object of this code place `fun` is (1, 2, ...: jax caches traces per object; gone ones go)."""
    for number, ref in list(function.objects.items()):
        if ref() is fun:
            return number
        if ref() is None:
            del function.objects[number]
    try:
        ref = weakref.ref(fun)
    except TypeError:
        return 0
    function.made += 1
    function.objects[function.made] = ref
    return function.made


def _outside_program(path):
    if not _skip:
        for name in ("jax", "jaxlib"):
            module = sys.modules.get(name)
            if module is not None and getattr(module, "__file__", None):
                _skip.append(os.path.dirname(os.path.abspath(module.__file__)) + os.sep)
        _skip.append(os.path.dirname(os.path.abspath(__file__)) + os.sep)
    return path.startswith(tuple(_skip)) or path.startswith("<frozen")


def call_site():
    """`file:line` of the program's frame that called into jax (None: none found)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not _outside_program(os.path.abspath(path) if not path.startswith("<") else path):
            return "%s:%d" % (path, frame.f_lineno)
        frame = frame.f_back
    return None


# ---- argument signatures ------------------------------------------------------------------------------------


def _parameter_names(fun):
    try:
        import inspect

        return [p.name for p in inspect.signature(fun).parameters.values()]
    except (TypeError, ValueError):
        return []


def _abstractify():
    for module_name in ("jax._src.core", "jax._src.api_util"):
        found = getattr(sys.modules.get(module_name), "shaped_abstractify", None)
        if found is not None:
            return found
    return None


def _leaf(path, value, abstractify):
    part = {"p": path}
    try:
        aval = abstractify(value)
        part.update(shape=list(aval.shape), dtype=str(aval.dtype), weak=bool(getattr(aval, "weak_type", False)))
    except Exception as exc:
        part["error"] = obs.describe(exc)
    try:  # a tracer's sharding may raise
        sharding = None if type(value).__name__.endswith("Tracer") else getattr(value, "sharding", None)
    except Exception:
        sharding = None
    part["sharding"] = str(sharding) if sharding is not None else None
    return part


def _static(path, value):
    text = repr(value)
    return {"p": path, "static": text if len(text) <= 200 else text[:197] + "...", "type": type(value).__name__}


def signature(fun, static_nums, static_names, args, kwargs):
    """One part per argument leaf (`x`, `params['w']`) or static argument, as jax saw them."""
    import jax

    flatten = jax.tree_util.tree_flatten_with_path
    keystr = jax.tree_util.keystr
    abstractify = _abstractify()
    names = _parameter_names(fun)
    nums = {n % len(args) if args and n < 0 else n for n in (static_nums or ())}
    parts = []
    items = [(names[i] if i < len(names) else "args[%d]" % i, i in nums, a) for i, a in enumerate(args)]
    items += [(k, k in (static_names or ()), v) for k, v in sorted(kwargs.items())]
    for name, is_static, value in items:
        if is_static:
            parts.append(_static(name, value))
            continue
        leaves, _ = flatten(value)
        for path, leaf in leaves:
            parts.append(_leaf(name + keystr(path), leaf, abstractify))
    return parts


# ---- the hooks ------------------------------------------------------------------------------------------------


def _split(args):
    """(fun, jit_info, call args, call kwargs) of an `_infer_params` call, on every jax it knows."""
    if len(args) == 3 and hasattr(args[0], "fun"):  # jax 0.4.x: (jit_info, args, kwargs)
        return args[0].fun, args[0], args[1], args[2]
    return args[0], args[1], args[2], args[3]


def wrap_infer_params(original):
    def _infer_params(*args, **kwargs):
        tls = obs.thread_state()
        depth = getattr(tls, "depth", 0)
        tls.depth = depth + 1
        if not depth:
            tls.traced = None
        try:
            result = original(*args, **kwargs)
        finally:
            tls.depth = depth
        if not depth:  # a call from the program (nested calls are part of their caller's trace)
            try:
                _called(tls, args)
            except Exception as exc:
                obs.note_once("traces", "a jit call could not be recorded (%s)" % obs.describe(exc))
        return result

    return _infer_params


def wrap_trace_for_jit(original):
    def _trace_for_jit(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            tls = obs.thread_state()
            if getattr(tls, "depth", 0) == 1:
                tls.traced = time.perf_counter() - start

    return _trace_for_jit


def on_duration(event, duration, **kwargs):
    """jax.monitoring's listener (jax 0.4.x): a trace of a top-level call (the outer trace ends last)."""
    if event == TRACE_EVENT:
        tls = obs.thread_state()
        if getattr(tls, "depth", 0) == 1:
            tls.traced = duration


def _tracers(call_args, call_kwargs):
    """The tracer types among the arguments: the call is part of a transformation (grad, vmap, ...)."""
    import jax

    tracer = getattr(sys.modules.get("jax._src.core"), "Tracer", None)
    if tracer is None:
        return None
    leaves = jax.tree_util.tree_leaves((call_args, call_kwargs))
    return sorted({type(leaf).__name__ for leaf in leaves if isinstance(leaf, tracer)}) or None


def _called(tls, args):
    fun, info, call_args, call_kwargs = _split(args)
    function = function_of(fun)
    link = {"f": function, "t": None, "sig": None, "obj": None, "call": next(_calls)}
    link["under"] = _tracers(call_args, call_kwargs)
    if tls.traced is not None:
        link["t"] = next(_traces)
        link["obj"] = _object_number(function, fun)
        link["sig"] = signature(
            fun, getattr(info, "static_argnums", ()), getattr(info, "static_argnames", ()), call_args, call_kwargs
        )
        obs.event(
            "trace",
            f=function.f,
            tr=link["t"],
            obj=link["obj"],
            s=round(tls.traced, 6),
            site=call_site(),
            sig=link["sig"],
        )
    recent = tls.__dict__.setdefault("recent", {})
    if len(recent) > 256:
        recent.clear()
    for module in function.modules:
        recent[module] = link


def compiled_link(lowered_name):
    """The jit call whose module `lowered_name` is compiling on this thread (None: not one jax's jit made)."""
    return obs.thread_state().__dict__.get("recent", {}).get(lowered_name)


# ---- recompiles, as they happen -------------------------------------------------------------------------------


def changes(before, after):
    """What differs between two signatures, in words (at most 3)."""
    if before is None or after is None:
        return []
    old, new = {p["p"]: p for p in before}, {p["p"]: p for p in after}
    found = []
    for path in list(new) + [p for p in old if p not in new]:
        a, b = old.get(path), new.get(path)
        if a is None or b is None:
            found.append("argument %s %s" % (path, "added" if a is None else "removed"))
        elif "static" in a or "static" in b:
            if a.get("static") != b.get("static"):
                found.append("static argument %s: %s -> %s" % (path, a.get("static"), b.get("static")))
        else:
            for key, word in (("shape", "shape"), ("dtype", "dtype"), ("weak", "weak type"), ("sharding", "sharding")):
                if a.get(key) != b.get(key) and (key != "sharding" or None not in (a.get(key), b.get(key))):
                    found.append("argument %s: %s %s -> %s" % (path, word, a.get(key), b.get(key)))
    return found[:3] + (["and %d more" % (len(found) - 3)] if len(found) > 3 else [])


def recompiled(link, m, seconds, cache_state, site):
    """A compile of `link`'s function: from the second call that compiles on, with XLATOOLS_OBSERVE_EXPLAIN, one
    line on stderr (more modules of one call, as under jax.grad, are not recompiles)."""
    function = link["f"]
    function.compiles += 1
    if link["call"] in function.calls:
        return
    function.calls.add(link["call"])
    previous, function.last = function.last, link if link["sig"] is not None else function.last
    if len(function.calls) < 2 or function.internal or not settings["explain"]:
        return
    under = link["under"] and [
        "called under a transformation (%s): jax compiled the transformed program" % ", ".join(link["under"])
    ]
    if link["t"] is None:
        why = under or ["compiled again without a new trace (jax no longer held the compiled executable)"]
    else:
        why = changes(previous["sig"] if previous else None, link["sig"])
        if not why and previous is not None and previous["obj"] != link["obj"]:
            why = ["a new function object with the same code (jax keeps one cache per function object)"]
        why = why or under or ["traced again with the same signature (jax's trace cache no longer held it)"]
    settings["printed"] += 1
    cache = ", persistent cache %s" % cache_state if cache_state else ""
    text = "xlatools: recompile #%d of %s (compile %d of it, module #%d, %.3f s%s)%s: %s\n" % (
        settings["printed"],
        function.name,
        len(function.calls),
        m,
        seconds,
        cache,
        " called at %s" % site if site else "",
        "; ".join(why),
    )
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass


def hook(pjit):
    """Wrap pjit's call entry (and its trace, where jax has one function for it) or listen for trace events."""
    infer = getattr(pjit, "_infer_params", None)
    if infer is None:
        obs.note("this jax has no pjit._infer_params: traces are not counted, compiles are not tied to functions")
        return
    pjit._infer_params = wrap_infer_params(infer)
    obs.state["hooks"].append("trace")
    traced = getattr(pjit, "_trace_for_jit", None)
    if traced is not None:
        pjit._trace_for_jit = wrap_trace_for_jit(traced)
        return
    try:
        from jax._src import monitoring

        monitoring.register_event_duration_secs_listener(on_duration)
    except Exception as exc:
        obs.note("traces are not counted (no jax.monitoring listener: %s)" % obs.describe(exc))
