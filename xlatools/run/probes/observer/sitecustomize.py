"""xlatools' observer in the program's interpreter (found on PYTHONPATH as `sitecustomize`).

Standalone: runs in the TARGET interpreter at start-up and imports nothing of xlatools, nor jax. It takes
its settings out of the environment (XLATOOLS_OBSERVE_DIR, XLATOOLS_OBSERVE_CALLS, XLATOOLS_OBSERVE_PYTHONPATH),
restores PYTHONPATH, chains to the sitecustomize it shadows, and waits for the program to import jax. Then:

- jax's compile call (compiler.compile_or_get_cached) and XLA's compile inside it (backend_compile /
  backend_compile_and_load) are timed, and the new executable's memory and cost analyses read;
- an executable's call through Python (pxla.ExecuteReplicated.__call__) is synchronised (its outputs
  waited for) and timed while it has calls left to time (XLATOOLS_OBSERVE_CALLS per executable, -1: all);
- jax's C++ fast path (pjit._get_fastpath_data) is withheld from an executable with calls left to time,
  with jax's own "rebuild the cache entry" answer (pjit._need_to_rebuild_with_fdo, jax >= 0.4.30), so its
  next call comes through Python again; once timed it gets the fast path as usual.

It writes `<dir>/<pid>.events.jsonl` (one JSON object per line, flushed as it happens) and rewrites
`<dir>/<pid>.status.json` in place: the format is in docs/metrics.md. Nothing here may stop the program:
every failure becomes a `note` event. Works on jax 0.4.26 ... 0.12. Its two parts beside it:
_xlatools_observer_out.py (state, files) and _xlatools_observer_jax.py (the wrappers).
"""

import os
import sys

_SETTINGS = (
    "XLATOOLS_OBSERVE_DIR",
    "XLATOOLS_OBSERVE_CALLS",
    "XLATOOLS_OBSERVE_PYTHONPATH",
    "XLATOOLS_OBSERVE_EXPLAIN",
    "XLATOOLS_OBSERVE_COMPILES",  # 0: no traces or cache outcomes (the benchmark's baseline, docs/cache.md)
)
_HERE = os.path.dirname(os.path.abspath(__file__))


class _AfterImport:
    """A meta-path finder that hooks each of jax's modules once it has loaded (the program may never import jax)."""

    def __init__(self, targets, loaded):
        self.pending, self.loaded = set(targets), loaded

    def find_spec(self, name, path=None, target=None):
        if name not in self.pending:
            return None
        self.pending.discard(name)
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        finally:
            if self.pending:
                sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            self.loaded(name, module)

        spec.loader.exec_module = exec_module
        return spec


def _start(settings):
    import _xlatools_observer_jax  # our parts: this folder is still on sys.path
    import _xlatools_observer_out
    import _xlatools_observer_trace

    _xlatools_observer_trace.settings["explain"] = settings["XLATOOLS_OBSERVE_EXPLAIN"] == "1"
    _xlatools_observer_trace.settings["record"] = settings["XLATOOLS_OBSERVE_COMPILES"] != "0"
    budget = settings["XLATOOLS_OBSERVE_CALLS"]
    _xlatools_observer_out.start(settings["XLATOOLS_OBSERVE_DIR"], int(budget) if budget else 20)
    sys.meta_path.insert(0, _AfterImport(_xlatools_observer_jax.TARGETS, _xlatools_observer_jax.loaded))


def _main():
    settings = {name: os.environ.pop(name, None) for name in _SETTINGS}
    if settings["XLATOOLS_OBSERVE_PYTHONPATH"]:
        os.environ["PYTHONPATH"] = settings["XLATOOLS_OBSERVE_PYTHONPATH"]
    else:
        os.environ.pop("PYTHONPATH", None)
    if settings["XLATOOLS_OBSERVE_DIR"]:
        try:
            _start(settings)
        except Exception as exc:  # never the program's problem
            sys.stderr.write("xlatools: metrics are off in this run (%s: %s)\n" % (type(exc).__name__, exc))
    if _HERE in sys.path:
        sys.path.remove(_HERE)
    me = sys.modules.pop("sitecustomize", None)  # the sitecustomize ours hides, as usual
    try:
        __import__("sitecustomize")
    except ImportError:
        sys.modules["sitecustomize"] = me


_main()
