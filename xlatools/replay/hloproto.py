"""HloSnapshot / HloProto / HloModuleProto files, read with the protobuf package.

jaxlib ships no .proto files, so the few messages a replay needs are declared here
with descriptor_pb2 (field numbers as in openxla/xla `xla/service/hlo.proto` and
`xla/xla_data.proto`). Messages we only pass on (the module itself) are declared as
`bytes`: a length-delimited field reads the same as a message, so the serialized
HloModuleProto comes out untouched and the target compiles it.

protobuf is imported on first use, never at CLI start-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from xlatools.errors import UsageError

# PrimitiveType numbers (xla_data.proto) -> (dtype name, numpy storage descr, LiteralProto field).
# Storage: how the values travel in .npy (ml_dtypes types as raw unsigned ints; the target views them back).
PRIMITIVES: dict[int, tuple[str, str, str]] = {
    1: ("bool", "|b1", "preds"),
    2: ("int8", "|i1", "s8s"),
    3: ("int16", "<i2", "s16s"),
    4: ("int32", "<i4", "s32s"),
    5: ("int64", "<i8", "s64s"),
    6: ("uint8", "|u1", "u8s"),
    7: ("uint16", "<u2", "u16s"),
    8: ("uint32", "<u4", "u32s"),
    9: ("uint64", "<u8", "u64s"),
    10: ("float16", "<f2", "f16s"),
    11: ("float32", "<f4", "f32s"),
    12: ("float64", "<f8", "f64s"),
    15: ("complex64", "<c8", "c64s"),
    16: ("bfloat16", "<u2", "bf16s"),
    18: ("complex128", "<c16", "c128s"),
    19: ("float8_e5m2", "|u1", "f8e5m2s"),
    20: ("float8_e4m3fn", "|u1", "f8e4m3fns"),
}
TUPLE = 13
_REPEATED_FORMAT = {
    "preds": "?",
    "s32s": "i",
    "s64s": "q",
    "u32s": "I",
    "u64s": "Q",
    "f32s": "f",
    "f64s": "d",
    "c64s": "f",
    "c128s": "d",
}


# The messages read here, as `field number TYPE|Message [repeated]` (the numbers are XLA's, from xla_data.proto
# and hlo.proto); a LiteralProto's BYTES arrays hold raw little-endian values, read with numpy.
MESSAGES = {
    "LayoutProto": ["minor_to_major 1 INT64 repeated"],
    "ShapeProto": ["element_type 2 INT32", "dimensions 3 INT64 repeated", "tuple_shapes 4 ShapeProto repeated",
                   "layout 5 LayoutProto"],
    "ProgramShapeProto": ["parameters 1 ShapeProto repeated", "result 2 ShapeProto"],
    "LiteralProto": ["shape 1 ShapeProto", "tuple_literals 10 LiteralProto repeated", "preds 2 BOOL repeated",
                     "u8s 3 BYTES", "s32s 4 INT32 repeated", "s64s 5 INT64 repeated", "u32s 6 UINT32 repeated",
                     "u64s 7 UINT64 repeated", "f32s 8 FLOAT repeated", "f64s 9 DOUBLE repeated", "f16s 11 BYTES",
                     "c64s 12 FLOAT repeated", "bf16s 13 BYTES", "s8s 15 BYTES", "u16s 16 BYTES", "s16s 17 BYTES",
                     "c128s 18 DOUBLE repeated", "f8e5m2s 19 BYTES", "f8e4m3fns 20 BYTES"],
    "HloModuleProto": ["name 1 STRING", "entry_computation_name 2 STRING", "computations 3 BYTES repeated",
                       "host_program_shape 4 ProgramShapeProto", "id 5 INT64"],
    "HloProtoRaw": ["hlo_module 1 BYTES"],
    "HloProto": ["hlo_module 1 HloModuleProto"],
    "HloSnapshot": ["hlo 1 HloProtoRaw", "arguments 2 LiteralProto repeated", "result 3 LiteralProto",
                    "execution_platform 4 STRING"],
    "HloInputs": ["arguments 1 LiteralProto repeated"],
    "HloUnoptimizedSnapshot": ["hlo_module 1 BYTES", "partitions 2 HloInputs repeated"],
}  # fmt: skip


def _schema():
    """The message classes, built once from MESSAGES (a hand-written descriptor: no generated code to vendor)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="xlatools_hlo_subset.proto", package="xlatools_xla", syntax="proto3"
    )
    for message, fields in MESSAGES.items():
        declared = proto.message_type.add(name=message)
        for spec in fields:
            name, number, kind, *repeated = spec.split()
            label = F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL
            scalar = kind.isupper()
            field = declared.field.add(
                name=name,
                number=int(number),
                label=label,
                type=getattr(F, f"TYPE_{kind}") if scalar else F.TYPE_MESSAGE,
            )
            if not scalar:
                field.type_name = f".xlatools_xla.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    names = ("LiteralProto", "HloModuleProto", "HloProtoRaw", "HloProto", "HloSnapshot", "HloUnoptimizedSnapshot")
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"xlatools_xla.{name}")) for name in names}


@lru_cache(maxsize=None)
def schema() -> dict[str, type]:  # message name -> its generated class
    try:
        return _schema()
    except ImportError:
        from xlatools.errors import EnvironmentMissing

        raise EnvironmentMissing("reading .pb files needs the protobuf package", hint="pip install protobuf") from None


@dataclass
class Array:
    """One array of a literal: raw little-endian bytes in physical (layout) order."""

    dtype: str  # numpy/ml_dtypes name
    storage: str  # .npy descr of the bytes
    shape: list[int]  # logical dimensions
    minor_to_major: list[int]
    data: bytes

    @property
    def physical_shape(self) -> list[int]:
        """Dimensions from major to minor: the order the bytes are in."""
        return [self.shape[d] for d in reversed(self.minor_to_major)] if self.minor_to_major else list(self.shape)


@dataclass
class HloModule:
    name: str
    serialized: bytes  # a serialized HloModuleProto
    parameters: int | None = None


@dataclass
class Snapshot:
    module: HloModule
    arguments: list[Array] = field(default_factory=list)
    result: list[Array] = field(default_factory=list)  # tuple results flattened
    platform: str = ""


def _parse(kind: str, data: bytes, path: Path):
    from google.protobuf.message import DecodeError

    msg = schema()[kind]()
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise UsageError(
            f"{path}: not a valid {kind} (truncated or not a protobuf file: {exc})",
            hint="give an XLA dump's .hlo.pb or *.snapshot.*.pb, uncut",
        ) from None
    return msg


def read_module_proto(path: Path) -> HloModule:
    """A `.hlo.pb`: XLA dumps an HloProto (module + buffer assignment); a bare HloModuleProto also reads."""
    data = _read(path)
    from google.protobuf.message import DecodeError

    try:
        wrapped = schema()["HloProto"]()
        wrapped.ParseFromString(data)
        if wrapped.hlo_module.name and wrapped.hlo_module.computations:
            raw = schema()["HloProtoRaw"]()
            raw.ParseFromString(data)
            return _module(raw.hlo_module, path)
    except DecodeError:
        pass
    return _module(data, path)


def _module(serialized: bytes, path: Path) -> HloModule:
    module = _parse("HloModuleProto", serialized, path)
    if not module.name or not module.computations:
        raise UsageError(
            f"{path}: holds no HLO module (no name or no computations)",
            hint="give an XLA dump's .hlo.pb (--xla_dump_hlo_as_proto) or a snapshot .pb",
        )
    params = len(module.host_program_shape.parameters) if module.HasField("host_program_shape") else None
    return HloModule(module.name, serialized, params)


def holds_snapshot(path: Path) -> bool:
    """The file's content is an HloSnapshot (a module and its arguments), whatever its name: for a `.pb` whose
    name does not say (`*.snapshot.*.pb`), told apart from an HloProto or HloModuleProto by reading it."""
    try:
        read_snapshot(path, literals=False)
    except UsageError:
        return False
    return not is_unoptimized(path)


def is_unoptimized(path: Path) -> bool:
    """`*.hlo_unoptimized_snapshot.pb` (--xla_dump_hlo_unoptimized_snapshots): the module before
    optimisation and each partition's arguments, no result. Any other snapshot holds the optimised module."""
    return "unoptimized_snapshot" in Path(path).name


def read_snapshot(path: Path, literals: bool = True) -> Snapshot:
    """The module, and with `literals` the arguments and result (off: only the module is needed)."""
    if is_unoptimized(path):
        unopt = _parse("HloUnoptimizedSnapshot", _read(path), path)
        if not unopt.hlo_module:
            raise UsageError(f"{path}: an unoptimised snapshot without a module")
        arguments = [
            a
            for literal in (unopt.partitions[0].arguments if unopt.partitions and literals else [])
            for a in flatten_literal(literal, path)
        ]
        return Snapshot(_module(unopt.hlo_module, path), arguments, [], "")
    snap = _parse("HloSnapshot", _read(path), path)
    if not snap.HasField("hlo") or not snap.hlo.hlo_module:
        raise UsageError(
            f"{path}: an HloSnapshot without a module", hint="give a file written by --xla_dump_hlo_snapshots"
        )
    module = _module(snap.hlo.hlo_module, path)
    arguments = [a for literal in snap.arguments for a in flatten_literal(literal, path)] if literals else []
    result = flatten_literal(snap.result, path) if literals and snap.HasField("result") else []
    return Snapshot(module, arguments, result, snap.execution_platform)


def _read(path: Path) -> bytes:
    """A protobuf file's bytes: only a regular file (a link to /dev/zero would never end, a FIFO blocks)."""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UsageError(
                f"{path}: not a regular file (a device, FIFO or folder, or a link to one): not read",
                hint="give an XLA dump's .hlo.pb or *.snapshot.*.pb file itself (or remove this one from the bundle)",
            )
        return Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror}") from None


def flatten_literal(literal, path: Path) -> list[Array]:
    """A literal's arrays in order (tuples flattened depth-first)."""
    shape = literal.shape
    if shape.element_type == TUPLE:
        return [a for part in literal.tuple_literals for a in flatten_literal(part, path)]
    known = PRIMITIVES.get(shape.element_type)
    if known is None:
        raise UsageError(
            f"{path}: a literal of XLA primitive type {shape.element_type}, which xlatools cannot convert",
            hint="replay the module with --inputs random instead of the snapshot's arguments",
        )
    dtype, storage, field_name = known
    dims = list(shape.dimensions)
    m2m = list(shape.layout.minor_to_major) if shape.HasField("layout") else []
    values = getattr(literal, field_name)
    if field_name in _REPEATED_FORMAT:
        import struct

        data = struct.pack(f"<{len(values)}{_REPEATED_FORMAT[field_name]}", *values)
    else:
        data = bytes(values)
    count = 1
    for d in dims:
        count *= d
    itemsize = int(storage[2:]) if storage[1] != "b" else 1
    if len(data) != count * itemsize:
        raise UsageError(
            f"{path}: a {dtype}{dims} literal holds {len(data)} bytes, expected {count * itemsize}",
            hint="the file is damaged or from an XLA whose literal encoding xlatools does not know",
        )
    return [Array(dtype, storage, dims, m2m, data)]
