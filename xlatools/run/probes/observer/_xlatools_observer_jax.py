"""xlatools' observer, part 2 (of sitecustomize.py beside it): the wrappers of jax's compile and call paths.

Standalone, like sitecustomize.py: imports nothing of xlatools; runs inside jax's own calls, so every
failure of ours becomes a `note` event and the program goes on as it would have.
"""

import sys
import time

import _xlatools_observer_cache as cache
import _xlatools_observer_module as module_files
import _xlatools_observer_out as obs
import _xlatools_observer_trace as trace

_COMPILER, _PXLA, _PJIT = "jax._src.compiler", "jax._src.interpreters.pxla", "jax._src.pjit"
_KEY, _CACHE = "jax._src.cache_key", "jax._src.compilation_cache"
TARGETS = (_COMPILER, _PXLA, _PJIT, _KEY, _CACHE)
_BACKEND_COMPILES = ("backend_compile", "backend_compile_and_load")
_done = set()


def _lowered_name(computation):
    try:
        return str(computation.operation.attributes["sym_name"]).strip('"')
    except Exception:
        return None


def _wrap_compile(original):
    def compile_or_get_cached(*args, **kwargs):
        m, name = next(obs.numbers), _lowered_name(args[1] if len(args) > 1 else kwargs.get("computation"))
        obs.event("compile_start", m=m, name=name)
        obs.status("compiling", m, name)
        tls = obs.thread_state()
        stack = tls.__dict__.setdefault("backend", [])
        stack.append(None)
        outer = cache.started()
        start = time.perf_counter()
        try:
            executable = original(*args, **kwargs)
        except BaseException as exc:
            tls.compile = outer
            obs.event("compile_end", m=m, name=name, s=round(time.perf_counter() - start, 6), error=obs.describe(exc))
            obs.status("python", m, name)
            raise
        finally:
            backend_s = stack.pop()
        seconds = time.perf_counter() - start
        seen, tls.compile = tls.compile, outer
        try:
            _compiled(m, name, executable, seconds, backend_s, (seen, args, kwargs))
        except Exception as exc:
            obs.note("module %s: could not read its analyses (%s)" % (name, obs.describe(exc)))
        obs.status("python", m, name)
        return executable

    return compile_or_get_cached


def _wrap_backend_compile(original):
    def backend_compile(*args, **kwargs):
        stack = obs.thread_state().__dict__.get("backend")
        if not stack or stack[-1] is not None:  # outside jax's compile call, or nested in another backend compile
            return original(*args, **kwargs)
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            stack[-1] = time.perf_counter() - start

    return backend_compile


def _compiled(m, lowered, executable, seconds, backend_s, context):
    start = time.perf_counter()
    try:
        name = executable.hlo_modules()[0].name
    except Exception:
        name = lowered
    obs.register(id(executable), obs.Module(m, name))
    entry = {"m": m, "name": name, "s": round(seconds, 6), "backend_s": None, "cache_hit": None}
    if backend_s is not None:
        entry.update(backend_s=round(backend_s, 6), cache_hit=False)
    elif "backend_compile" in obs.state["hooks"]:
        entry["cache_hit"] = True
    entry.update(_devices(executable))
    entry["memory"] = _memory(executable)
    entry.update(_cost(executable))
    _compile_story(entry, lowered, executable, context)
    usage = obs.rusage()  # so far: a process that never reaches its `end` leaves these
    entry.update(rss_kb=usage["maxrss_kb"], utime=usage["utime"], stime=usage["stime"])
    entry["observer_s"] = round(time.perf_counter() - start, 6)
    obs.event("compile_end", **entry)


def _devices(executable):
    try:
        devices = executable.local_devices()
        return {"platform": str(devices[0].platform), "devices": len(devices)}
    except Exception:
        return {"platform": None, "devices": None}


def _memory(executable):
    try:
        stats = executable.get_compiled_memory_stats()
    except Exception:
        return None
    fields = (
        ("temp", "temp_size_in_bytes"),
        ("argument", "argument_size_in_bytes"),
        ("output", "output_size_in_bytes"),
        ("alias", "alias_size_in_bytes"),
        ("code", "generated_code_size_in_bytes"),
        ("host_temp", "host_temp_size_in_bytes"),
    )
    return {key: int(getattr(stats, attr)) for key, attr in fields if getattr(stats, attr, None) is not None}


def _cost(executable):
    try:
        cost = executable.cost_analysis()
    except Exception:
        return {}
    if isinstance(cost, (list, tuple)):  # jaxlib 0.4.x: one dict per HLO module
        cost = cost[0] if cost else {}
    if not isinstance(cost, dict):
        return {}
    keys = (("flops", "flops"), ("transcendentals", "transcendentals"), ("bytes_accessed", "bytes accessed"))
    # A negative count is XLA's "not known" (the GPU's cost analysis gave flops -8 for cuBLAS products on an H200)
    return {
        key: float(cost[name]) for key, name in keys if isinstance(cost.get(name), (int, float)) and cost[name] >= 0
    }


def _compile_story(entry, lowered, executable, context):
    """Which jit call compiled it, what the persistent cache did, its devices and HLO (docs/cache.md)."""
    seen, args, kwargs = context
    if not trace.settings["record"]:
        return
    try:
        entry["cache"] = cache.outcome(seen, entry["backend_s"])
    except Exception as exc:
        obs.note_once("cache", "the persistent cache's outcome could not be read (%s)" % obs.describe(exc))
    entry["device_ids"] = module_files.devices(args[2] if len(args) > 2 else kwargs.get("devices"))
    entry["process_id"] = cache.process_id()
    link = trace.compiled_link(lowered)
    entry["site"] = trace.call_site()
    if link is not None:
        entry.update(f=link["f"].f, tr=link["t"], call=link["call"], under=link["under"])
    if entry["backend_s"] is not None and not (link is not None and link["f"].internal):
        entry["hlo"] = module_files.write_hlo(entry["m"], entry["name"], executable)
        entry["hlo_stage"] = "after_optimizations" if entry["hlo"] else None
    if link is not None:
        state = (entry.get("cache") or {}).get("state")
        trace.recompiled(link, entry["m"], entry["s"], state if state in ("hit", "miss") else None, entry["site"])


# ---- execute ----------------------------------------------------------------------------------------------


def _module_for(call):
    executable = call.xla_executable
    module = obs.modules.get(id(executable))
    if module is None:  # compiled where the observer did not see it (e.g. deserialized)
        module = obs.register(id(executable), obs.Module(next(obs.numbers), str(getattr(call, "name", "?"))))
        obs.event("module", m=module.m, name=module.name, note="not compiled through jax's compile call")
    return module


def _wrap_execute(original):
    def __call__(self, *args):
        try:
            module = _module_for(self)
        except Exception:
            return original(self, *args)
        if not module.seen:  # before its first call: a process stuck in it says so
            module.seen = True
            obs.event("exec_first", m=module.m, name=module.name)
        budget = obs.state["budget"]
        if budget < 0 or module.timed < budget:
            return _timed(original, self, args, module)
        module.untimed += 1
        obs.status("executing", module.m, module.name)
        try:
            return original(self, *args)
        finally:
            obs.status("python", module.m, module.name)

    return __call__


def _timed(original, call, args, module):
    obs.status("executing", module.m, module.name)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        out = original(call, *args)
        _ready(out)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        obs.status("python", module.m, module.name)
    module.timed += 1
    module.wall.append(round(wall, 7))
    module.cpu.append(round(cpu, 7))
    if len(module.wall) >= obs.BATCH or module.timed == obs.state["budget"]:
        obs.flush(module)
    return out


def _ready(out):
    """Wait for the outputs; an execution error stays the program's to see where it reads them."""
    try:
        for value in out if isinstance(out, (list, tuple)) else (out,):
            wait = getattr(value, "block_until_ready", None)
            if wait is not None:
                wait()
    except Exception:
        pass


def _wrap_fastpath(original):
    def _get_fastpath_data(executable, *args, **kwargs):
        data = original(executable, *args, **kwargs)
        if data is None:
            return None
        try:
            budget = obs.state["budget"]
            module = obs.modules.get(id(executable.xla_executable))
            if budget < 0:
                return None  # every call through Python: jax keeps this call signature off its fast path
            if module is not None and module.timed < budget:
                obs.thread_state().rebuild = True  # read by jax next, in the same cache miss
                return None
        except Exception:
            pass
        return data

    return _get_fastpath_data


def _wrap_rebuild(original):
    def _need_to_rebuild_with_fdo(*args, **kwargs):
        tls = obs.thread_state()
        if getattr(tls, "rebuild", False):
            tls.rebuild = False
            return True
        return original(*args, **kwargs)

    return _need_to_rebuild_with_fdo


# ---- hooking jax ------------------------------------------------------------------------------------------


def _patch(module, attribute, wrap, hook):
    original = getattr(module, attribute, None)
    if original is None:
        return False
    setattr(module, attribute, wrap(original))
    obs.state["hooks"].append(hook)
    return True


def _patch_compiler(compiler):
    if not _patch(compiler, "compile_or_get_cached", _wrap_compile, "compile"):
        obs.note("this jax has no compiler.compile_or_get_cached: compiles are not observed")
    if not any([_patch(compiler, name, _wrap_backend_compile, "backend_compile") for name in _BACKEND_COMPILES]):
        obs.note("this jax has no compiler.backend_compile: a persistent-cache load is not told from a compile")
    if trace.settings["record"] and not _patch(compiler, "_cache_write", cache.wrap_cache_write, "cache_write"):
        obs.note("this jax has no compiler._cache_write: why a compile was not cached is not known")


def _patch_pxla(pxla):
    cls = getattr(pxla, "ExecuteReplicated", None)
    if cls is None or "__call__" not in dir(cls):
        obs.note("this jax has no pxla.ExecuteReplicated: calls are not timed")
        return
    cls.__call__ = _wrap_execute(cls.__call__)
    obs.state["hooks"].append("execute")


def _patch_pjit(pjit):
    if trace.settings["record"]:
        trace.hook(pjit)
    budget = obs.state["budget"]
    if budget == 0:
        return
    rebuild = getattr(pjit, "_need_to_rebuild_with_fdo", None)
    if rebuild is None and budget > 0:
        obs.note(
            "this jax cannot send a call back through Python (no pjit._need_to_rebuild_with_fdo): only the first "
            "call of each executable is timed (--measure-calls all times every call)"
        )
        return
    if not _patch(pjit, "_get_fastpath_data", _wrap_fastpath, "fastpath"):
        obs.note("this jax has no pjit._get_fastpath_data: only the first call of each executable is timed")
        return
    if rebuild is not None:
        pjit._need_to_rebuild_with_fdo = _wrap_rebuild(rebuild)


def loaded(name, module):
    """Hook jax's module `name`, which has just loaded; once all three are, say which hooks hold."""
    try:
        hooks = {_COMPILER: _patch_compiler, _PXLA: _patch_pxla, _PJIT: _patch_pjit}
        if trace.settings["record"]:
            hooks.update({_KEY: cache.hook_cache_key, _CACHE: cache.hook_compilation_cache})
        hooks.get(name, lambda module: None)(module)
    except Exception as exc:
        obs.note("the observer could not hook %s (%s)" % (name, obs.describe(exc)))
    _done.add(name)
    if len(_done) == len(TARGETS):
        _versions()


def _versions():
    found = {}
    for package in ("jax", "jaxlib"):
        try:
            found[package] = sys.modules[package].__version__ if package in sys.modules else None
        except Exception:
            found[package] = None
    obs.event(
        "jax", jax=found["jax"], jaxlib=found["jaxlib"] or _jaxlib_version(), hooks=sorted(set(obs.state["hooks"]))
    )


def _jaxlib_version():
    try:
        from jax._src.lib import version_str

        return version_str
    except Exception:
        return None
