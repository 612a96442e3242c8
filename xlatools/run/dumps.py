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
names it unambiguously (its folder, before_optimizations, or another fixed tail) and stripped
from the rest. The names themselves are read by xlatools/hlo/dump_names.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlatools.errors import UsageError
from xlatools.hlo.dump_names import REPORTS, SNAPSHOT_KINDS, DumpKind, DumpName, parse_dump_name
from xlatools.hlo.grammar import is_instruction
from xlatools.records.run import DumpModuleSummary, SourceRef
from xlatools.run.dump_source import SourceLine, scan_before
from xlatools.run.dump_stats import hlo_file_stats
from xlatools.run.frontend_names import frontend_name
from xlatools.run.jax_ir import stablehlo_files

# A file's kind -> the stage a module's summary lists (kinds not named here list as themselves).
_STAGES = {DumpKind.PASS_STEP: "passes", DumpKind.SNAPSHOT: "snapshots", DumpKind.UNOPTIMIZED_SNAPSHOT: "snapshots"}
# Files only a GPU compile writes (jaxlib 0.11.2, CUDA: ../shared/fixtures/gpu-h200 and FIELD_NOTES §10); the
# emitter's (.ptx, .ll, Triton) with --xla_dump_emitter_re (dump:llvm). The CPU's LLVM IR (ir-no-opt/ir-with-opt) is not one.
GPU_KINDS = frozenset(
    {
        DumpKind.PTX,
        DumpKind.TRITON_IR,
        DumpKind.THUNK_SEQUENCE,
        DumpKind.THUNK_METADATA,
        DumpKind.AUTOTUNE_RESULTS,
        DumpKind.GPU_TARGET_CONFIG,
    }
)


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
    stablehlo: str | None = None  # what jax handed XLA, relative to the dump (run/jax_ir.py)

    def __post_init__(self) -> None:
        if not self.short_name:
            self.short_name, self.origin = frontend_name(self.name)

    def summary(self) -> DumpModuleSummary:
        """The module as a run's manifest records it (no file list: the manifest's file index has them)."""
        source = self.source
        return DumpModuleSummary(
            id=self.id,
            name=self.name,
            bytes=self.bytes,
            stages=sorted(self.stages),
            before_file=self.before_file,
            after_file=self.after_file,
            platform=self.platform,
            snapshots=self.snapshots,
            instructions_before=self.instructions_before,
            instructions_after=self.instructions_after,
            source=source_ref(source) if source else None,
            short_name=self.short_name,
            origin=self.origin,
            pass_steps=len(self.steps),
            file_count=len(self.files),
            stablehlo=self.stablehlo,
        )

    def listing(self) -> "ModuleListing":
        return ModuleListing(**vars(self.summary()), files=list(self.files), gpu_files=dict(self.gpu_files))

    def detail(self) -> "ModuleDetail":
        return ModuleDetail(
            **vars(self.summary()), files=list(self.files), steps=list(self.steps), gpu_files=dict(self.gpu_files)
        )


def source_ref(source: SourceLine) -> SourceRef:
    """A source line as manifests and `inspect --json` record it, with the library frame it called."""
    return SourceRef(
        file=source.file, line=source.line, function=source.function, via=source_ref(source.via) if source.via else None
    )


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
        named = [m for m in self.modules.values() if m.name == ref] or [
            m for m in self.modules.values() if m.short_name == ref
        ]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            ids = ", ".join(f"{m.id:04d}" + (f" (created at {m.source.short()})" if m.source else "") for m in named)
            raise UsageError(
                f"{len(named)} modules are named '{ref}': {ids}",
                hint=f"pick one by id, e.g. --module {named[0].id:04d}",
            )
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
        return DumpListing(
            root=str(self.root),
            layout=self.layout,
            modules=[m.listing() for m in self.sorted_modules()],
            files=totals["files"],
            bytes=totals["bytes"],
            other_files=list(self.other_files),
        )


def modules_table(index: DumpIndex, leave_out: frozenset[int] | set[int] = frozenset()) -> str:
    """One row per module (but the ids in `leave_out`): id, name, source line, instruction counts, passes,
    snapshots, files, bytes."""
    from xlatools.console import columns

    def n(value: int | None) -> str:
        return "-" if value is None else str(value)

    rows = [("id", "module", "source", "instr before", "instr after", "passes", "snapshots", "files", "bytes")]
    for m in sorted((m for m in index.modules.values() if m.id not in leave_out), key=lambda m: m.id):
        rows.append(
            (
                f"{m.id:04d}",
                m.short_name,
                m.source.short() if m.source else "-",
                n(m.instructions_before),
                n(m.instructions_after),
                str(len(m.steps)),
                str(m.snapshots),
                str(len(m.files)),
                str(m.bytes),
            )
        )
    return columns(rows)


def count_instructions(path: Path) -> int | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return sum(1 for line in handle if is_instruction(line))
    except OSError:
        return None


def _module_names(entries: list[tuple[DumpName, bool]]) -> dict[int, str]:
    """Each module's name: from its folder, else its before_optimizations file, else any name read for certain."""
    names: dict[int, str] = {}
    for name, is_dir in entries:
        if is_dir:
            names[name.module_id] = name.module_name
    for name, _ in entries:
        if name.kind is DumpKind.BEFORE_OPTIMIZATIONS:
            names.setdefault(name.module_id, name.module_name)
    for certain in (True, False):
        for name, _ in entries:
            if name.name_certain == certain:
                names.setdefault(name.module_id, name.module_name)
    return names


def _classify(module: Module, name: DumpName, rel: str) -> None:
    kind = name.kind
    # Another `-<report>` of the optimised module lists as the report's name.
    module.stages.add((name.detail or "other") if kind is DumpKind.AFTER_REPORT else _STAGES.get(kind, kind.value))
    if kind is DumpKind.BEFORE_OPTIMIZATIONS and name.fmt == "txt":
        module.before_file = rel
    elif kind is DumpKind.PASS_STEP and name.fmt == "txt" and name.step is not None:
        module.steps.append(PassStep(name.step, name.pipeline or "", name.pass_name or "", name.next_pass, rel))
    elif kind in SNAPSHOT_KINDS:
        module.snapshots += 1
    elif kind is DumpKind.AFTER_OPTIMIZATIONS or kind in REPORTS.values() or kind is DumpKind.AFTER_REPORT:
        module.stages.add("after_optimizations")
        module.platform = name.platform
        if kind is DumpKind.AFTER_OPTIMIZATIONS and name.fmt == "txt":
            module.after_file = rel
    if kind in GPU_KINDS or (kind is DumpKind.LLVM_IR and "ir-no-opt" not in rel and "ir-with-opt" not in rel):
        module.gpu_files.setdefault(kind.value, []).append(rel)


def index_dump(root: Path) -> DumpIndex:
    """Index every file under `root` (an XLA dump directory)."""
    root = Path(root)
    # XLA writes plain files and folders only: links (a loop, or a path out of the dump), FIFOs (a read
    # would block) and devices are left out, so nothing outside the dump is ever read through it.
    listing = sorted(p for p in root.iterdir() if not p.is_symlink() and (p.is_dir() or p.is_file()))
    parsed = {path: parse_dump_name(path.name, folder=path.is_dir()) for path in listing}
    names = _module_names([(name, path.is_dir()) for path, name in parsed.items() if name is not None])
    modules = {module_id: Module(module_id, name) for module_id, name in names.items()}
    other: list[str] = []
    has_folders = False
    for path in listing:
        first = parsed[path]
        if first is None:
            other.extend(
                p.relative_to(root).as_posix()
                for p in ([path] if path.is_file() else path.rglob("*"))
                if p.is_file() and not p.is_symlink()
            )
            continue
        module = modules[first.module_id]
        if path.is_dir():
            has_folders = True
            module.stages.add("module_folder")
            inner = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
            module.files += [p.relative_to(root).as_posix() for p in inner]
            module.stablehlo = next((p.relative_to(root).as_posix() for p in inner if p.name == "module.mlir"), None)
            module.bytes += sum(p.stat().st_size for p in inner)
            continue
        rel = path.name
        module.files.append(rel)
        module.bytes += path.stat().st_size
        _classify(module, parse_dump_name(path.name, module_name=module.name) or first, rel)
    untied = [(m.id, m.name) for m in modules.values() if m.stablehlo is None]
    for module_id, rel in stablehlo_files(root, untied, other).items():
        modules[module_id].stablehlo = rel
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
    if not any(parse_dump_name(p.name, folder=p.is_dir()) for p in path.iterdir()):
        raise UsageError(
            f"{path}: no XLA dump files (module_NNNN.*) here", hint="give a run bundle or the --xla_dump_to directory"
        )
    return path
