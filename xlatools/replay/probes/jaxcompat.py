"""The one compatibility layer over jaxlib's HLO APIs (jaxlib 0.4.30 ... 0.12.x).

Where the bindings live moved: `xla_extension` (0.4.x: `xla_client._xla`), then
`jaxlib._jax`, then `jaxlib._hlo` (jaxlib_extension_version >= 457), re-exported
as `xla_client.hlo`. Clients compile only MLIR: HLO -> serialized HloModuleProto ->
StableHLO (`hlo_to_stablehlo` on new jaxlibs; `xla_computation_to_mlir_module` on
old ones) -> `compile_and_load` (new) or `compile` (old).
Standalone: imported by replay_module.py in the target interpreter.
"""

import re

_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def _client():
    from jax._src.lib import xla_client

    return xla_client


def _hlo_namespace():
    xc = _client()
    return getattr(xc, "hlo", None) or xc._xla  # jaxlib._hlo re-exported, else xla_extension


def computation_class():
    xc = _client()
    return getattr(_hlo_namespace(), "XlaComputation", None) or xc.XlaComputation


def strip_stack_frames(text):
    """HLO text without the stack-frame tables and stack_frame_id attributes newer printers write
    (older parsers refuse them; they carry source locations only)."""
    out, skipping = [], False
    for line in text.splitlines():
        if line.strip() in _TABLES:
            skipping = True
            continue
        if skipping:
            if line.strip():
                continue
            skipping = False
        out.append(line)
    return re.sub(r"\s*stack_frame_id=\d+", "", "\n".join(out) + "\n")


def proto_from_text(text):
    """Serialized HloModuleProto of HLO text; retries without stack-frame tables for older parsers."""
    parse = _hlo_namespace().hlo_module_from_text
    try:
        return parse(text).as_serialized_hlo_module_proto(), "text"
    except Exception as first:
        stripped = strip_stack_frames(text)
        if stripped == text:
            raise
        try:
            return parse(stripped).as_serialized_hlo_module_proto(), "text (stack-frame tables dropped)"
        except Exception:
            raise first from None


def load(kind, payload):
    """(computation, mlir) for `payload`: HLO text (str), a serialized HloModuleProto (bytes) or StableHLO text."""
    xc = _client()
    mlir_api = xc._xla.mlir
    how = kind
    if kind == "mlir":
        computation = mlir_api.mlir_module_to_xla_computation(payload, use_tuple_args=False, return_tuple=False)
        return computation, payload, how
    if kind == "text":
        payload, how = proto_from_text(payload)
    computation = computation_class()(payload)
    if hasattr(mlir_api, "hlo_to_stablehlo"):
        mlir = mlir_api.hlo_to_stablehlo(payload)
    else:
        mlir = mlir_api.xla_computation_to_mlir_module(computation)
    return computation, mlir, how


def prepare_runtime():
    """What a real program gets from `import jax` and from lowering, set up before a module runs here.

    64-bit types stay as the module declares them: without x64, jax turns f64/s64 arguments into
    f32/s32 (RuntimeProgramInputMismatch). jaxlib's LAPACK kernels (the CPU custom calls behind
    jnp.linalg) are initialised: jax does it lazily while it lowers a linalg op, which a replay never
    does, and an uninitialised kernel calls through a null pointer (SIGSEGV)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        from jax._src.lib import lapack

        lapack._lapack.initialize()
    except (ImportError, AttributeError):
        pass  # a jaxlib without LAPACK kernels (a GPU-only build): nothing to set up


def backend():
    from jax._src import xla_bridge

    return xla_bridge.get_backend()


CALLBACK_RAN = "xlatools-replay: a host callback of the module ran"
_CALLBACK_INDEX = re.compile(r"index = (\d+) : ui64")


def callback_count(hlo_text):
    """How many host callbacks jax registered for the module (FFI callbacks carry their index), 0 if none."""
    if "_callback" not in hlo_text:
        return 0
    return 1 + max([int(i) for i in _CALLBACK_INDEX.findall(hlo_text)] or [0])


def _refuse_callback(*args):
    raise RuntimeError(CALLBACK_RAN)


def _option_value(text):
    """A debug option's value as its type: XLA refuses 'false' for a bool option."""
    text = str(text)
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def compile_mlir(client, mlir, callbacks=0, overrides=None):
    """Compile for one device. A module with host callbacks gets stand-ins that fail with CALLBACK_RAN when one
    runs (the program's Python functions are not here; without stand-ins it would call through a stale index).
    `overrides`: {debug option: value} the run compiled with (its dump's .debug_options)."""
    xc = _client()
    options = xc.CompileOptions()
    if overrides:
        options.env_option_overrides = [(str(k), _option_value(v)) for k, v in sorted(overrides.items())]
    if not hasattr(client, "compile_and_load"):
        return client.compile(mlir, options)  # jaxlib 0.4.x: callbacks are raw pointers in the module itself
    devices = client.local_devices()[:1]
    if callbacks:
        try:
            from jax._src.interpreters import mlir as jax_mlir
            from jax._src.lib.mlir import ir

            with jax_mlir.make_ir_context():
                module = ir.Module.parse(mlir)
                return client.compile_and_load(
                    module, xc.DeviceList(tuple(devices)), options, host_callbacks=[_refuse_callback] * callbacks
                )
        except (ImportError, AttributeError, TypeError):
            pass  # an API without stand-ins: the callback's failure says it
    return client.compile_and_load(mlir, devices, options)


def optimized_text(executable):
    modules = executable.hlo_modules()
    return modules[0].to_string() if modules else ""


def parameter_shapes(computation):
    """[(dims, numpy dtype)] of the entry parameters (tuples flattened)."""
    shapes = []

    def add(shape):
        if shape.is_tuple():
            for part in shape.tuple_shapes():
                add(part)
        else:
            shapes.append((tuple(shape.dimensions()), shape.numpy_dtype()))

    for shape in computation.program_shape().parameter_shapes():
        add(shape)
    return shapes
