"""xlatools' observer, part 4 (of sitecustomize.py beside it): what jax's persistent compilation cache did
with each compile, and the compiled program's HLO text.

Standalone, like sitecustomize.py: imports nothing of xlatools. jax 0.4.30 ... 0.12 compute a key with
`cache_key.get`, feeding one sha256 part by part (computation, jax_lib version, [backend version], XLA flags,
compile_options, accelerator_config, compression, custom_hook) and calling `_log_cache_key_hash(hash, name,
...)` after each part (it logs the part's hash at DEBUG). Here the sha256 of that module records the bytes each
part fed in, cut at those calls: the parts are what jax hashed, not a reconstruction. The lookup
(`compilation_cache.get_executable_and_time`), jax's decision to write (`compiler._cache_write`) and the write
(`compilation_cache.put_executable_and_time`) say hit, miss, written, or why not.
"""

import base64
import errno
import hashlib
import os
import sys

import _xlatools_observer_out as obs

SMALL = 4096  # a part whose bytes are all under this is kept as text (flags, versions)


class _Recorded:
    """jax's cache-key sha256, recording the bytes fed since the last part ended."""

    __slots__ = ("real", "part", "chunks")

    def __init__(self, real):
        self.real, self.part, self.chunks = real, hashlib.sha256(), []

    def update(self, data):
        self.real.update(data)
        self.part.update(data)
        if self.chunks is not None:
            self.chunks = self.chunks + [bytes(data)] if len(data) < SMALL and len(self.chunks) < 256 else None

    def take(self):
        part, chunks = self.part, self.chunks
        self.part, self.chunks = hashlib.sha256(), []
        return part.hexdigest(), chunks

    def __getattr__(self, name):  # digest, hexdigest, copy, ...
        return getattr(self.real, name)


class _Hashlib:
    """Stands in for `hashlib` in jax's cache_key module: records while one of our compiles computes a key."""

    def __getattr__(self, name):
        return getattr(hashlib, name)

    def sha256(self, *args):
        real = hashlib.sha256(*args)
        current = getattr(obs.thread_state(), "compile", None)
        wanted = current is not None and current["keyed"] and not current.get("logging")
        return _Recorded(real) if wanted else real


def hook_cache_key(module):
    if not all(hasattr(module, n) for n in ("get", "_log_cache_key_hash", "hashlib")):
        obs.note("this jax's cache_key has no get/_log_cache_key_hash: persistent-cache key parts are not recorded")
        return
    log, get = module._log_cache_key_hash, module.get

    def _log_cache_key_hash(hash_obj, name, hashfn):
        current = getattr(obs.thread_state(), "compile", None)
        if current is not None and isinstance(hash_obj, _Recorded):
            current.setdefault("parts", []).append(_part(name, *hash_obj.take()))
            current["logging"] = True  # jax's own DEBUG log hashes the part again: not ours to record
            try:
                return log(hash_obj, name, hashfn)
            finally:
                current["logging"] = False
        return log(hash_obj, name, hashfn)

    def get_key(*args, **kwargs):
        current = getattr(obs.thread_state(), "compile", None)
        if current is not None:
            current["parts"] = []
        key = get(*args, **kwargs)
        if current is not None:
            current.setdefault("keys", {})[key] = current.pop("parts", [])
        return key

    module._log_cache_key_hash, module.get, module.hashlib = _log_cache_key_hash, get_key, _Hashlib()
    obs.state["hooks"].append("cache_key")


def _part(name, sha, chunks):
    part = {"name": str(name), "sha256": sha}
    if chunks is None or name == "computation":
        return part
    if name == "compile_options" and len(chunks) == 1:
        part["wire"] = base64.b64encode(chunks[0]).decode()
        part["options"] = _readable_options(chunks[0])
        return part
    part["values"] = [_text(c) for c in chunks]
    return part


def _text(chunk):
    """A chunk jax hashed: its text when it is printable text (a flag, a version), else its hex."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return chunk.hex()
    return text if text.isprintable() else chunk.hex()


def _scalar(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    text = " ".join(str(value).split())  # a multi-line repr (a device assignment on jaxlib 0.4.x) on one line
    return text if len(text) <= 300 else text[:297] + "..."


def _readable_options(serialized):
    """The compile options jax hashed, parsed back by jaxlib: every field its Python binding shows."""
    try:
        from jax._src.lib import xla_client

        options = xla_client.CompileOptions.ParseFromString(serialized)
    except Exception:
        return None
    found = {}
    for prefix, obj in (("", options), ("build.", getattr(options, "executable_build_options", None))):
        for name in dir(obj) if obj is not None else ():
            if name.startswith("_") or name in ("executable_build_options", "debug_options"):
                continue
            try:
                value = getattr(obj, name)
            except Exception:
                continue
            if not callable(value) and not isinstance(value, bytes):
                found[prefix + name] = _scalar(value)
    debug = getattr(getattr(options, "executable_build_options", None), "debug_options", None)
    for name in dir(debug) if debug is not None else ():
        if name.startswith("xla_"):
            try:
                found["debug." + name] = _scalar(getattr(debug, name))
            except Exception:
                pass
    return found


def hook_compilation_cache(module):
    get, put = getattr(module, "get_executable_and_time", None), getattr(module, "put_executable_and_time", None)
    if get is None or put is None:
        obs.note("this jax has no compilation_cache.get/put_executable_and_time: cache hits are not told from misses")
        return

    def get_executable_and_time(cache_key, *args, **kwargs):
        current = getattr(obs.thread_state(), "compile", None)
        try:
            found = get(cache_key, *args, **kwargs)
        except Exception as exc:
            if current is not None:
                current.update(lookup="error", key=cache_key, read_error=obs.describe(exc))
            raise
        if current is not None:
            current.update(lookup="found" if found and found[0] is not None else "absent", key=cache_key)
        return found

    def put_executable_and_time(cache_key, *args, **kwargs):
        current = getattr(obs.thread_state(), "compile", None)
        if current is not None:
            current["put"] = True
        try:
            return put(cache_key, *args, **kwargs)
        except Exception as exc:
            if current is not None:
                current["write_error"] = exc
            raise

    module.get_executable_and_time, module.put_executable_and_time = get_executable_and_time, put_executable_and_time
    obs.state["hooks"].append("cache")


def wrap_cache_write(original):
    def _cache_write(*args, **kwargs):
        current = getattr(obs.thread_state(), "compile", None)
        if current is not None:
            named = dict(zip(("cache_key", "compile_time_secs", "module_name", "backend", "executable"), args))
            named.update(kwargs)
            current["jax_compile_s"] = named.get("compile_time_secs")
            current["host_callbacks"] = len(kwargs.get("host_callbacks", args[5] if len(args) > 5 else ()) or ())
            current["decided"] = True
        return original(*args, **kwargs)

    return _cache_write


# ---- after a compile: the outcome ---------------------------------------------------------------------------


def _config(name):
    module = sys.modules.get("jax._src.config")
    holder = getattr(module, name, None)
    value = getattr(holder, "value", None)
    if value is None and holder is None:
        try:
            import jax

            value = jax.config.read("jax_" + name)
        except Exception:
            return None
    return value


def process_id():
    try:
        return sys.modules["jax._src.distributed"].global_state.process_id
    except Exception:
        return None


def _entry_exists(folder, key):
    if not folder or not key or "://" in str(folder):
        return None
    return any(os.path.exists(os.path.join(str(folder), key + suffix)) for suffix in ("-cache", ""))


def _write_failure(exc):
    number = getattr(exc, "errno", None)
    if isinstance(exc, OSError) and number is not None:
        kind = {errno.EROFS: "read_only", errno.ENOSPC: "full", errno.EDQUOT: "full", errno.EACCES: "permission"}
        return kind.get(number, "write_error"), "could not write the entry: %s" % obs.describe(exc)
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    if any("serialize" in f for f in frames):
        return "not_serialisable", "the executable could not be serialised: %s" % obs.describe(exc)
    return "write_error", "could not write the entry: %s" % obs.describe(exc)


def _not_written(current, minimum):
    """Why jax's _cache_write did not try to write (its own checks, in its order, from the same settings)."""
    process = process_id()
    if process not in (None, 0):
        return "process_index", "process %d: jax writes cache entries from process 0 only" % process
    if current.get("host_callbacks"):
        return "host_callbacks", "the module uses host callbacks (jax.debug.print, callbacks): jax does not cache it"
    took = current.get("jax_compile_s")
    if isinstance(took, (int, float)) and isinstance(minimum, (int, float)) and took < minimum:
        return "min_compile_time", "below the minimum compile time: XLA took %.3f s < %g s (%s)" % (
            took,
            minimum,
            "jax_persistent_cache_min_compile_time_secs",
        )
    return "unknown", "jax did not write it (xlatools could not tell why)"


def outcome(current, backend_s):
    """The `cache` field of a compile_end event."""
    folder, minimum = _config("compilation_cache_dir"), _config("persistent_cache_min_compile_time_secs")
    if folder and "://" not in str(folder):
        folder = os.path.abspath(str(folder))  # as the program's working directory makes it
    cache = {"dir": folder, "min_compile_s": minimum, "key": current.get("key"), "written": None}
    enabled = _config("enable_compilation_cache")
    keys = current.get("keys") or {}
    cache["parts"] = keys.get(current.get("key")) or (list(keys.values())[-1] if keys else None)
    if enabled is False or not folder:
        cache.update(state="off", reason="off" if enabled is False else "no_dir")
        cache["why"] = (
            "the cache is off (jax_enable_compilation_cache is False)"
            if enabled is False
            else "the cache is off: no cache folder (jax_compilation_cache_dir is not set)"
        )
        return cache
    lookup = current.get("lookup")
    if lookup is None:
        cache.update(state="off", reason="not_used", why="jax did not use its cache for this compile")
        return cache
    if lookup == "found":
        cache.update(state="hit", written=None)
        return cache
    cache["state"] = "miss"
    if lookup == "error":
        cache["read_error"] = current.get("read_error")
    if backend_s is None and not current.get("decided"):
        cache.update(reason="not_decided", why="compiled elsewhere (shared by another process)")
        return cache
    if "write_error" in current:
        cache["reason"], cache["why"] = _write_failure(current["write_error"])
        cache["written"] = False
    elif not current.get("put"):
        cache["reason"], cache["why"] = _not_written(current, minimum)
        cache["written"] = False
    else:
        cache["written"] = _entry_exists(folder, current.get("key"))
        if cache["written"] is False:
            cache["reason"] = "not_stored"
            cache["why"] = "jax did not store it (min entry size %s bytes, max cache size %s bytes)" % (
                _config("persistent_cache_min_entry_size_bytes"),
                _config("compilation_cache_max_size"),
            )
    return cache


def started():
    """A compile begins on this thread: where the cache hooks put what they see."""
    tls = obs.thread_state()
    # jax computes a key even with no cache folder: its parts are only worth recording when there is one
    keyed = bool(_config("compilation_cache_dir")) and _config("enable_compilation_cache") is not False
    outer, tls.compile = getattr(tls, "compile", None), {"keyed": keyed}
    return outer
