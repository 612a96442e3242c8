"""What the name of a file in an XLA dump folder says: module id and name, kind, pass step, platform.

Names seen (jaxlib 0.4.30, 0.10.2, 0.12 on the CPU; 0.11.2 on an H200; TensorFlow and torch_xla):
  [<micros>.]module_<id>.<name>.before_optimizations.{txt,hlo.pb,html,dot}
  module_<id>.<name>.<platform>_after_optimizations[-<report>].<format>
      platform: cpu, sm_9.0a_gpu, ...; report: buffer-assignment[-values], live-range, memory-usage-report
  module_<id>.<name>.<4-digit step>.<pipeline>.after_<pass>[.before_<next>].<format>   (per-pass)
  module_<id>.<name>.snapshot.<run id>.pb, .execution_<n>.hlo_[unoptimized_]snapshot.{pb,txt}
  module_<id>.<name>.debug_options, [<kernel>.]ir-{no,with}-opt.ll, [obj-file.<kernel>.]o, <kernel>_kernel_module-*.mlir
  GPU: .thunk_sequence[_after_thunk_passes].txt, .thunk_metadata.txt, .autotune_results.pbtxt,
       .gpu_target_config.pbtxt, .config.pbtxt, .before_config_assignment.txt, .after_spmd_partitioner.txt,
       [<kernel>.].ptx, [<kernel>.].ll, Triton [<kernel>.]ttir.txt
  module_<id>.<name>/ (jaxlib >= 0.10.1): module.mlir, compile_options.{pb,textproto}, topology.{pb,textproto}
      (jaxlib 0.8.0-0.10.0: <name>_<microseconds>/, no module id: run/jax_ir.py ties those)
  p<N>/...  a process's own dump folder of a multi-process run (run/process_dumps.py)
Module names may hold dots (`jit_Model.apply`, TensorFlow's `a_inference_f_18__XlaMustCompile_..._.2`,
torch_xla's `SyncTensorsGraph.5`): a name is taken up to the first point where the rest reads as a known
tail. Where a kernel name sits between the module name and the tail (`<kernel>.ir-no-opt.ll`) the split
cannot be known from the name alone: give `module_name` (from the module's folder or before_optimizations
file), else the name ends at its first dot and `name_certain` is False.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class DumpKind(StrEnum):
    BEFORE_OPTIMIZATIONS = "before_optimizations"
    AFTER_OPTIMIZATIONS = "after_optimizations"
    BUFFER_ASSIGNMENT = "buffer-assignment"
    BUFFER_ASSIGNMENT_VALUES = "buffer-assignment-values"
    LIVE_RANGE = "live-range"
    MEMORY_USAGE_REPORT = "memory-usage-report"
    AFTER_REPORT = "after_optimizations_report"  # another `-<report>` of the optimised module (`detail`)
    PASS_STEP = "pass_step"
    SNAPSHOT = "snapshot"
    UNOPTIMIZED_SNAPSHOT = "unoptimized_snapshot"
    DEBUG_OPTIONS = "debug_options"
    BEFORE_CONFIG_ASSIGNMENT = "before_config_assignment"
    AFTER_SPMD_PARTITIONER = "after_spmd_partitioner"
    THUNK_SEQUENCE = "thunk_sequence"
    THUNK_METADATA = "thunk_metadata"
    AUTOTUNE_RESULTS = "autotune_results"
    GPU_TARGET_CONFIG = "gpu_target_config"
    COMPILE_CONFIG = "config"
    LLVM_IR = "llvm_ir"
    PTX = "ptx"
    TRITON_IR = "triton_ir"
    KERNEL_MLIR = "kernel_mlir"
    OBJECT_CODE = "object_code"
    MODULE_FOLDER = "module_folder"  # the folder module_<id>.<name>/ itself
    MODULE_MLIR = "module_mlir"  # module_<id>.<name>/module.mlir
    COMPILE_OPTIONS = "compile_options"
    TOPOLOGY = "topology"
    OTHER = "other"


REPORTS = {
    "buffer-assignment": DumpKind.BUFFER_ASSIGNMENT,
    "buffer-assignment-values": DumpKind.BUFFER_ASSIGNMENT_VALUES,
    "live-range": DumpKind.LIVE_RANGE,
    "memory-usage-report": DumpKind.MEMORY_USAGE_REPORT,
}
SNAPSHOT_KINDS = frozenset({DumpKind.SNAPSHOT, DumpKind.UNOPTIMIZED_SNAPSHOT})
PROCESS_FOLDER = re.compile(r"^p(\d+)$")
_MODULE = re.compile(r"^(?:(?P<stamp>\d+)\.)?module_(?P<id>\d+)\.(?P<rest>.+)$")
_FORMAT = r"(?P<fmt>txt|html|dot|url|hlo\.pb|pb|pbtxt|textproto|json|mlir)"
# (kind, tail pattern, the tail starts right after the module name): fixed tails first, kernel-prefixed ones last.
_TAILS: list[tuple[DumpKind, re.Pattern, bool]] = [
    (kind, re.compile(pattern + "$"), fixed)
    for kind, pattern, fixed in [
        (DumpKind.BEFORE_OPTIMIZATIONS, r"before_optimizations\.(?P<fmt>.+)", True),
        (
            DumpKind.AFTER_OPTIMIZATIONS,
            r"(?P<platform>sm_\d+\.\d+[a-z]?_gpu|[\w-]+?)_after_optimizations(?:-(?P<report>[\w-]+?))?\.(?P<fmt>.+)",
            True,
        ),
        (
            DumpKind.PASS_STEP,
            r"(?P<step>\d{4})\.(?P<pipeline>[^.]+)\.after_(?P<pass>[^.]+)(?:\.before_(?P<next>[^.]+))?\." + _FORMAT,
            True,
        ),
        (
            DumpKind.SNAPSHOT,
            r"(?:snapshot\.(?P<run>-?\d+)\.pb|execution_(?P<execution>\d+)\.hlo_snapshot\.(?P<fmt>pb|txt))",
            True,
        ),
        (
            DumpKind.UNOPTIMIZED_SNAPSHOT,
            r"(?:unoptimized_snapshot\.(?P<run>-?\d+)\.pb"
            r"|execution_(?P<execution>\d+)\.hlo_unoptimized_snapshot\.(?P<fmt>pb|txt))",
            True,
        ),
        (DumpKind.DEBUG_OPTIONS, r"debug_options", True),
        (DumpKind.BEFORE_CONFIG_ASSIGNMENT, r"before_config_assignment\." + _FORMAT, True),
        (DumpKind.AFTER_SPMD_PARTITIONER, r"after_spmd_partitioner\." + _FORMAT, True),
        (DumpKind.THUNK_SEQUENCE, r"thunk_sequence(?:_(?P<detail>\w+))?\." + _FORMAT, True),
        (DumpKind.THUNK_METADATA, r"thunk_metadata\." + _FORMAT, True),
        (DumpKind.AUTOTUNE_RESULTS, r"autotune_results\." + _FORMAT, True),
        (DumpKind.GPU_TARGET_CONFIG, r"gpu_target_config\." + _FORMAT, True),
        (DumpKind.COMPILE_CONFIG, r"config\." + _FORMAT, True),
        (
            DumpKind.KERNEL_MLIR,
            r"(?P<detail>.+?_kernel_module)-(?:pre-optimization|post-optimization|post-lowering)\."
            r"(?P<fmt>mlir)",
            False,
        ),
        (DumpKind.LLVM_IR, r"(?:(?P<detail>.+?)\.)??(?:ir-(?:no|with)-opt[\w-]*\.)?(?P<fmt>ll)", False),
        (DumpKind.PTX, r"(?:(?P<detail>.+)\.)?(?P<fmt>ptx)", False),
        (
            DumpKind.TRITON_IR,
            r"(?:(?P<detail>.+)\.)?(?:ttir|ttgir|llir|triton-passes)(?:\.(?P<fmt>txt|log|mlir))?",
            False,
        ),
        (DumpKind.OBJECT_CODE, r"(?:(?P<detail>.+)\.)?(?P<fmt>o)", False),
    ]
]
_FIXED = frozenset(kind for kind, _, fixed in _TAILS if fixed)
_FOLDER_FILES = {
    "module.mlir": DumpKind.MODULE_MLIR,
    "compile_options": DumpKind.COMPILE_OPTIONS,
    "topology": DumpKind.TOPOLOGY,
}


@dataclass(frozen=True)
class DumpName:
    """One dump file's name, read. `stem` is the name up to the module name (`[<stamp>.]module_<id>.<name>`)
    and `tail` what follows it; `path` is what was parsed (with any p<N>/ and module folder)."""

    path: str
    module_id: int
    module_name: str
    kind: DumpKind
    stem: str
    tail: str
    fmt: str | None = None  # txt, hlo.pb, html, pbtxt, ll, ...
    platform: str | None = None  # after_optimizations: cpu, sm_9.0a_gpu
    step: int | None = None  # per-pass dumps
    pipeline: str | None = None
    pass_name: str | None = None
    next_pass: str | None = None
    detail: str | None = None  # a report's name, a snapshot's run id or execution, a kernel's name
    timestamp: int | None = None  # --xla_dump_include_timestamp
    process: int | None = None  # p<N>/ of a multi-process run
    name_certain: bool = True  # False where a kernel name may sit between module name and tail

    @property
    def is_text_hlo(self) -> bool:
        return self.fmt == "txt" and self.kind in (
            DumpKind.BEFORE_OPTIMIZATIONS,
            DumpKind.AFTER_OPTIMIZATIONS,
            DumpKind.PASS_STEP,
            DumpKind.BEFORE_CONFIG_ASSIGNMENT,
            DumpKind.AFTER_SPMD_PARTITIONER,
        )


def classify_tail(tail: str) -> tuple[DumpKind, dict[str, str | None]]:
    """What a tail (the part after the module name, or a bare name like `snapshot.12.pb`) is, and its fields."""
    for kind, pattern, _ in _TAILS:
        found = pattern.match(tail)
        if found:
            return kind, found.groupdict()
    return DumpKind.OTHER, {}


def _split(rest: str, module_name: str | None) -> tuple[str, str, DumpKind, dict[str, str | None], bool]:
    """(name, tail, kind, fields, name certain) of what follows `module_<id>.`."""
    if module_name and rest.startswith(module_name + "."):
        tail = rest[len(module_name) + 1 :]
        return (module_name, tail, *classify_tail(tail), True)
    dots = [i for i, char in enumerate(rest) if char == "."]
    for kind, pattern, fixed in _TAILS:
        for dot in dots:
            found = pattern.match(rest, dot + 1)
            if found:
                return rest[:dot], rest[dot + 1 :], kind, found.groupdict(), fixed
    name, _, tail = rest.partition(".")
    return name, tail, DumpKind.OTHER, {}, False


def read_bare_name(file_name: str) -> tuple[str, DumpKind]:
    """(stem, kind) of a dump file's name, also one without the `module_<id>.` prefix (a renamed copy:
    `f.before_optimizations.txt`, `f.snapshot.12.pb`, `snapshot.12.pb`). Without a known tail: the name less
    a .txt/.hlo/.pb/.mlir ending, and OTHER."""
    found = parse_dump_name(file_name)
    if found is not None:
        return found.stem, found.kind
    kind, _ = classify_tail(file_name)
    if kind in _FIXED:  # the whole name is a tail
        return "", kind
    stem, _, kind, _, _ = _split(file_name, None)
    if kind is DumpKind.OTHER:
        return re.sub(r"\.(txt|hlo|pb|mlir)$", "", file_name), kind
    return stem, kind


def parse_dump_name(file_name: str, *, module_name: str | None = None, folder: bool = False) -> DumpName | None:
    """The dump file `file_name` (a name, or a path inside a dump folder: `p1/module_0002.jit_f/module.mlir`)
    read; None when it is no module's file. `folder`: the name is a directory (a per-module folder)."""
    parts = [p for p in file_name.replace("\\", "/").split("/") if p]
    if not parts:
        return None
    process = None
    if len(parts) > 1 and (own := PROCESS_FOLDER.match(parts[0])):
        process, parts = int(own[1]), parts[1:]
    found = _MODULE.match(parts[0])
    if not found:
        return None
    stamp = int(found["stamp"]) if found["stamp"] else None
    module_id = int(found["id"])

    def make(**rest) -> DumpName:  # the fields every name has, and those of its kind
        return DumpName(path=file_name, module_id=module_id, timestamp=stamp, process=process, **rest)

    if folder or len(parts) > 1:  # the folder, or a file inside it: the folder's whole name is the module's
        stem = parts[0]
        inner = "/".join(parts[1:])
        kind = (
            DumpKind.MODULE_FOLDER
            if not inner
            else next(
                (k for prefix, k in _FOLDER_FILES.items() if inner == prefix or inner.startswith(prefix + ".")),
                DumpKind.OTHER,
            )
        )
        fmt = inner.split(".", 1)[1] if "." in inner else None
        return make(module_name=found["rest"], kind=kind, stem=stem, tail=inner, fmt=fmt)
    name, tail, kind, fields, certain = _split(found["rest"], module_name)
    report = fields.get("report")
    if kind is DumpKind.AFTER_OPTIMIZATIONS and report:
        kind = REPORTS.get(report, DumpKind.AFTER_REPORT)
    step = fields.get("step")
    detail = report or fields.get("run") or fields.get("execution") or fields.get("detail")
    stem = parts[0][: len(parts[0]) - len(tail) - 1] if tail else parts[0]
    fmt = fields.get("fmt") or ("pb" if kind in SNAPSHOT_KINDS else None)
    return make(
        module_name=name,
        kind=kind,
        stem=stem,
        tail=tail,
        fmt=fmt,
        platform=fields.get("platform"),
        step=int(step) if step else None,
        pipeline=fields.get("pipeline"),
        pass_name=fields.get("pass"),
        next_pass=fields.get("next"),
        detail=detail,
        name_certain=certain,
    )


def process_folder(name: str) -> int | None:
    """N of a multi-process run's `p<N>` dump folder; None for any other name."""
    found = PROCESS_FOLDER.match(name)
    return int(found[1]) if found else None
