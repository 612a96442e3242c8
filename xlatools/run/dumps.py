"""Read an XLA dump directory: modules, their stages, per-pass steps, sizes.

File names (both layouts seen in practice):
  module_NNNN.<name>.before_optimizations.txt      (also .html, .pb, .dot)
  module_NNNN.<name>.<platform>_after_optimizations.txt   (+ -buffer-assignment.txt, ...)
  module_NNNN.<name>.NNNN.<pipeline>.after_<pass>.before_<next>.txt   (per-pass steps)
  module_NNNN.<name>.snapshot.<run id>.pb, .debug_options, [<kernel>.]ir-no-opt.ll, .o
  module_NNNN.<name>.execution_NNNN.hlo_unoptimized_snapshot.{txt,pb}   (jaxlib >= 0.10)
  module_NNNN.<name>.<kernel>_kernel_module-{pre,post}-optimization.mlir, -post-lowering.mlir
jaxlib 0.10.x and 0.12.x number modules 0000, 0002, ... and add a folder per module
(module_NNNN.<name>/module.mlir, compile_options.pb, topology.pb); 0.4.30 numbers
them 0000, 0001, ... without folders. --xla_dump_include_timestamp prefixes `<micros>.`.
Other frontends name their modules differently (same files otherwise):
  TensorFlow tf.function(jit_compile=True): a_inference_<fn>_<n>__XlaMustCompile_true_config_proto_<n>_executor_type_<n>_.<n>
  TensorFlow auto-clustering: cluster_<n>__XlaCompiledKernel_true__XlaHasReferenceVars_false__..._.<n>
  PyTorch/XLA: SyncTensorsGraph.<n>
Module names may contain dots, so a module's name is taken from the file that
names it unambiguously (before_optimizations, or its folder) and stripped from the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.records.run import DumpModuleSummary, SourceRef
from xlatools.run.dump_source import INSTRUCTION, SourceLine, scan_before
from xlatools.run.dump_stats import hlo_file_stats
from xlatools.run.frontend_names import frontend_name

_FILE = re.compile(r"^(?:(?P<stamp>\d+)\.)?module_(?P<id>\d+)\.(?P<rest>.+)$")
_PASS = re.compile(
    r"^(?P<step>\d{4})\.(?P<pipeline>[^.]+)\.after_(?P<pass>.+?)(?:\.before_(?P<next>.+))?\.(?P<ext>[A-Za-z]+)$"
)
_AFTER = re.compile(r"^(?P<platform>.+?)_after_optimizations(?P<extra>[-.].*)?$")
_SNAPSHOT = re.compile(r"^(?:(?:unoptimized_)?snapshot\.-?\d+\.pb|execution_\d+\.hlo_(?:unoptimized_)?snapshot\.(?:pb|txt))$")
_KERNEL_MLIR = re.compile(r"_kernel_module-(?:pre-optimization|post-optimization|post-lowering)\.mlir$")
# Files only a GPU compile writes (jaxlib 0.11.2, CUDA: ../shared/fixtures/gpu-h200 and FIELD_NOTES §10); the
# emitter's (.ptx, .ll, Triton) with --xla_dump_emitter_re (dump:llvm).
GPU_FILES = (("ptx", re.compile(r"\.ptx$")), ("triton_ir", re.compile(r"(?:\.|^)(?:ttir|ttgir|llir|triton)[.-]|\.tt(?:g)?ir$")),
             ("llvm_ir", re.compile(r"\.ll$")), ("thunk_sequence", re.compile(r"^thunk_sequence.*\.txt$")),
             ("thunk_metadata", re.compile(r"^thunk_metadata\.txt$")),
             ("autotune_results", re.compile(r"^autotune_results\.(?:pbtxt|txt|textproto|pb)$")),
             ("gpu_target_config", re.compile(r"^gpu_target_config\.pbtxt$")))


@dataclass
class PassStep:
    step: int
    pipeline: str
    pass_name: str
    next_pass: str | None
    file: str
    instructions: int | None = None
    changed: bool | None = None  # compared with the previous step (the first: with before_optimizations)
    digest: str | None = None  # FileStats.digest of the step's file (filled by pass_details)


@dataclass
class Module:
    id: int
    name: str
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    stages: set[str] = field(default_factory=set)
    before_file: str | None = None
    after_file: str | None = None
    platform: str | None = None
    snapshots: int = 0
    steps: list[PassStep] = field(default_factory=list)
    instructions_before: int | None = None
    instructions_after: int | None = None
    source: SourceLine | None = None  # the user's line that created it (dump_source.py)
    short_name: str = ""  # the name a person reads: `f` for TensorFlow's a_inference_f_15__XlaMustCompile_...
    origin: str | None = None  # which frontend made it, when the name tells
    gpu_files: dict[str, list[str]] = field(default_factory=dict)  # GPU_FILES kind -> its files

    def __post_init__(self) -> None:
        if not self.short_name:
            self.short_name, self.origin = frontend_name(self.name)

    def summary(self) -> DumpModuleSummary:
        """The module as a run's manifest records it (no file list: the manifest's file index has them)."""
        source = self.source
        return DumpModuleSummary(
            id=self.id, name=self.name, bytes=self.bytes, stages=sorted(self.stages), before_file=self.before_file,
            after_file=self.after_file, platform=self.platform, snapshots=self.snapshots,
            instructions_before=self.instructions_before, instructions_after=self.instructions_after,
            source=SourceRef(file=source.file, line=source.line, function=source.function) if source else None,
            short_name=self.short_name, origin=self.origin, pass_steps=len(self.steps), file_count=len(self.files))

    def listing(self) -> "ModuleListing":
        return ModuleListing(**vars(self.summary()), files=list(self.files), gpu_files=dict(self.gpu_files))

    def detail(self) -> "ModuleDetail":
        return ModuleDetail(**vars(self.summary()), files=list(self.files), steps=list(self.steps),
                            gpu_files=dict(self.gpu_files))


@dataclass(kw_only=True)
class ModuleListing(DumpModuleSummary):
    """A module as `xlatools inspect --json` lists it: its summary and its files."""

    files: list[str] = field(default_factory=list)
    gpu_files: dict[str, list[str]] = field(default_factory=dict)  # PTX, LLVM IR, Triton IR, thunks, autotune results


@dataclass(kw_only=True)
class ModuleDetail(ModuleListing):
    """One module as `xlatools inspect --module --json` shows it: with its per-pass steps."""

    steps: list[PassStep] = field(default_factory=list)


@dataclass(kw_only=True)
class DumpListing:
    """A dump as `xlatools inspect --json` shows it."""

    root: str
    layout: str
    modules: list[ModuleListing]
    files: int
    bytes: int
    other_files: list[str]


@dataclass
class DumpIndex:
    root: Path
    modules: dict[int, Module]
    other_files: list[str]
    layout: str  # "per-module folders" or "flat"

    def find(self, ref: str) -> Module:
        """A module by id (`10`, `0010`) or name (`jit_f`)."""
        if ref.isdigit() and int(ref) in self.modules:
            return self.modules[int(ref)]
        named = [m for m in self.modules.values() if m.name == ref] or [m for m in self.modules.values() if m.short_name == ref]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            ids = ", ".join(f"{m.id:04d}" + (f" (created at {m.source.short()})" if m.source else "") for m in named)
            raise UsageError(f"{len(named)} modules are named '{ref}': {ids}",
                             hint=f"pick one by id, e.g. --module {named[0].id:04d}")
        import difflib

        names = sorted({m.name for m in self.modules.values()} | {m.short_name for m in self.modules.values()})
        close = difflib.get_close_matches(ref, names, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise UsageError(f"no module '{ref}' in {self.root}", hint=f"{hint}`xlatools inspect {self.root}` lists them")

    def sorted_modules(self) -> list[Module]:
        return sorted(self.modules.values(), key=lambda m: m.id)

    def totals(self) -> dict[str, int]:
        files = sum(len(m.files) for m in self.modules.values()) + len(self.other_files)
        return {"modules": len(self.modules), "files": files, "bytes": sum(m.bytes for m in self.modules.values())}

    def listing(self) -> DumpListing:
        totals = self.totals()
        return DumpListing(root=str(self.root), layout=self.layout, modules=[m.listing() for m in self.sorted_modules()],
                           files=totals["files"], bytes=totals["bytes"], other_files=list(self.other_files))


def modules_table(index: DumpIndex) -> str:
    """One row per module: id, name, source line, instruction counts, passes, snapshots, files, bytes."""
    from xlatools.console import columns

    def n(value: int | None) -> str:
        return "-" if value is None else str(value)

    rows = [("id", "module", "source", "instr before", "instr after", "passes", "snapshots", "files", "bytes")]
    for m in sorted(index.modules.values(), key=lambda m: m.id):
        rows.append((f"{m.id:04d}", m.short_name, m.source.short() if m.source else "-", n(m.instructions_before),
                     n(m.instructions_after), str(len(m.steps)), str(m.snapshots), str(len(m.files)), str(m.bytes)))
    return columns(rows)


def count_instructions(path: Path) -> int | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return sum(1 for line in handle if INSTRUCTION.match(line))
    except OSError:
        return None


def _module_names(entries: list[tuple[int, str, bool]]) -> dict[int, str]:
    names: dict[int, str] = {}
    for module_id, rest, is_dir in entries:
        if is_dir:
            names[module_id] = rest
    for module_id, rest, is_dir in entries:
        marker = rest.rfind(".before_optimizations")
        if not is_dir and marker > 0:
            names.setdefault(module_id, rest[:marker])
    for module_id, rest, _ in entries:
        names.setdefault(module_id, rest.split(".", 1)[0])
    return names


def _classify(module: Module, tail: str, rel: str) -> None:
    if tail.startswith("before_optimizations"):
        module.stages.add("before_optimizations")
        if tail == "before_optimizations.txt":
            module.before_file = rel
        return
    step = _PASS.match(tail)
    if step:
        module.stages.add("passes")
        if step["ext"] == "txt":
            module.steps.append(PassStep(int(step["step"]), step["pipeline"], step["pass"], step["next"], rel))
        return
    if _SNAPSHOT.match(tail):
        module.stages.add("snapshots")
        module.snapshots += 1
        return
    after = _AFTER.match(tail)
    if after:
        module.stages.add("after_optimizations")
        module.platform = after["platform"]
        if after["extra"] == ".txt":
            module.after_file = rel
        elif after["extra"] and after["extra"].startswith("-"):
            module.stages.add(after["extra"][1:].rsplit(".", 1)[0])  # buffer-assignment, memory-usage-report, ...
        return
    gpu = next((kind for kind, pattern in GPU_FILES if pattern.search(tail)), None)
    if "ir-no-opt" in tail or "ir-with-opt" in tail:  # the CPU's LLVM IR
        module.stages.add("llvm_ir")
    elif gpu is not None:
        module.stages.add(gpu)
        module.gpu_files.setdefault(gpu, []).append(rel)
    elif _KERNEL_MLIR.search(tail):
        module.stages.add("kernel_mlir")
    elif tail == "o" or tail.endswith(".o"):
        module.stages.add("object_code")
    elif tail == "debug_options":
        module.stages.add("debug_options")
    else:
        module.stages.add("other")


def index_dump(root: Path) -> DumpIndex:
    """Index every file under `root` (an XLA dump directory)."""
    root = Path(root)
    entries: list[tuple[int, str, bool]] = []
    # XLA writes plain files and folders only: links (a loop, or a path out of the dump), FIFOs (a read
    # would block) and devices are left out, so nothing outside the dump is ever read through it.
    listing = sorted(p for p in root.iterdir() if not p.is_symlink() and (p.is_dir() or p.is_file()))
    for path in listing:
        match = _FILE.match(path.name)
        if match:
            entries.append((int(match["id"]), match["rest"], path.is_dir()))
    names = _module_names(entries)
    modules = {module_id: Module(module_id, name) for module_id, name in names.items()}
    other: list[str] = []
    has_folders = False
    for path in listing:
        match = _FILE.match(path.name)
        if not match:
            other.extend(p.relative_to(root).as_posix() for p in ([path] if path.is_file() else path.rglob("*"))
                         if p.is_file() and not p.is_symlink())
            continue
        module = modules[int(match["id"])]
        if path.is_dir():
            has_folders = True
            module.stages.add("module_folder")
            inner = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
            module.files += [p.relative_to(root).as_posix() for p in inner]
            module.bytes += sum(p.stat().st_size for p in inner)
            continue
        rel = path.name
        module.files.append(rel)
        module.bytes += path.stat().st_size
        rest = match["rest"]
        tail = rest[len(module.name) + 1:] if rest.startswith(module.name + ".") else rest.split(".", 1)[-1]
        _classify(module, tail, rel)
    for module in modules.values():
        module.steps.sort(key=lambda s: s.step)
        if module.before_file:
            module.instructions_before, module.source = scan_before(root / module.before_file, module.name)
        if module.after_file:
            module.instructions_after = count_instructions(root / module.after_file)
    return DumpIndex(root, modules, other, "per-module folders" if has_folders else "flat")


def pass_details(index: DumpIndex, module: Module) -> list[PassStep]:
    """Fill instruction counts and changed flags of `module`'s steps (one chunked read of each step).

    A pass "changed" the module when anything but the header line differs: the header carries
    layouts and flags that passes rewrite without changing the graph."""
    before = hlo_file_stats(index.root / module.before_file) if module.before_file else None
    previous = before.body_sha256 if before else None
    for step in module.steps:
        stats = hlo_file_stats(index.root / step.file)
        digest = stats.body_sha256 if stats else None
        step.instructions = stats.instructions if stats else None
        step.digest = stats.digest if stats else None
        step.changed = None if previous is None or digest is None else digest != previous
        previous = digest
    return module.steps


def resolve_dump_dir(path: Path) -> Path:
    """A bundle (its xla_dump/), a `latest` link, or a dump directory itself."""
    path = Path(path).expanduser()
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory", hint="give a run bundle or an XLA dump directory")
    if not path.is_dir():
        raise UsageError(f"{path}: not a directory", hint="give a run bundle or an XLA dump directory")
    if (path / "xla_dump").is_dir():
        return path / "xla_dump"
    if (path / "manifest.json").is_file():
        raise UsageError(f"{path}: this bundle has no xla_dump/ (the run did not dump)", hint="run again with --dump")
    if not any(_FILE.match(p.name) for p in path.iterdir()):
        raise UsageError(f"{path}: no XLA dump files (module_NNNN.*) here", hint="give a run bundle or the --xla_dump_to directory")
    return path
