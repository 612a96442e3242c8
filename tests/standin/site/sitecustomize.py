"""The TF32 stand-in's hook (tests/standin/tf32.py): when the replay target imports jaxcompat, its
`load` of HLO text compiles the text with f32 dot/convolution operands rounded to TF32, and reports the
text it was given (module.txt) unchanged."""

import importlib.abc
import importlib.util
import sys


class _Computation:
    """The rounded module's computation, printing as the module it was given."""

    def __init__(self, rounded, given):
        self._rounded, self._given = rounded, given

    def __getattr__(self, name):
        return getattr(self._given if name == "as_hlo_text" else self._rounded, name)


def _standin():
    """tests/standin/tf32.py, loaded from its file (no `tests` package of the target's in the way)."""
    import os

    name = "xlatools_tf32_standin"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tf32.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def _install(jaxcompat):
    load = jaxcompat.load

    def load_tf32(kind, payload):
        if kind not in ("text", "mlir"):
            return load(kind, payload)
        standin = _standin()
        given, _, how = load(kind, payload)
        # StableHLO (what a GPU compiles first, as the run did) is rounded as the HLO text it converts to
        text = payload if kind == "text" else given.as_hlo_text(print_large_constants=True)
        rounded, count = standin.round_operands(text)
        computation, mlir, _ = load("text", rounded)
        return _Computation(computation, given), mlir, "%s; %s (%d operands)" % (how, standin.NOTE, count)

    jaxcompat.load = load_tf32


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "jaxcompat":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _install(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Hook())
