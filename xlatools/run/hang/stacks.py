"""Reading a process's stacks as pystack prints them (pure): its threads and frames, whether it is
compiling, executing or in Python, in which collective it waits, and which part of XLA a compile is in.

pystack's text, per thread: `Traceback for thread TID (NAME) [...] (most recent call last):`, then one
line per frame, outermost first: `(C) File "F", line N, in FUNCTION (LIBRARY)` or `(Python) File "F",
line N, in FUNCTION` (then its source line, and with --locals `Arguments:` / `Locals:` blocks of
`name: value` lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_THREAD = re.compile(r"^Traceback for thread (\d+) \(([^)]*)\)")
_FRAME = re.compile(r'^\s+\((C|Python)\) File "([^"]*)", line (\d+), in (.*?)(?: \((/[^()]*)\))?\s*$')
_LOCAL = re.compile(r'^\s{6,}(module_name|name): "([^"]{1,300})"\s*$')

# Native function names that say what a thread does (matched against the name before its arguments).
COMPILE = re.compile(
    r"CompileAndLoad|Compiler::Compile|RunHloPasses|RunBackend|::CompileInternal|CompileXlaRuntime"
    r"|PjRtStreamExecutorClient::Compile|backend_compile"
)
EXECUTE = re.compile(
    r"LoadedExecutable::Execute|PjRtCpuExecutable::Execute|ExecuteSharded|ExecuteHelper|ThunkExecutor"
    r"|PjitFunction::Call|ExecuteReplicated|Executable::ExecuteAsync|GpuExecutable::Execute"
)
COLLECTIVE = re.compile(
    r"gloo::|nccl|AllGather|AllReduce|ReduceScatter|AllToAll|CollectivePermute|Rendezvous|CpuCollectives"
    r"|process_allgather|sync_global_devices|broadcast_one_to_all",
    re.IGNORECASE,
)
PASS_RUN = re.compile(r"^xla::(?:[a-z_]+::)*([A-Z]\w+)::(?:RunImpl|Run)$")
NOT_A_PASS = {"HloPassPipeline", "HloPassFix", "HloPassInterface", "HloModulePass", "OpExpanderPass"}
LLVM_CODEGEN = re.compile(r"^llvm::(legacy::|orc::|SelectionDAG|MachineFunction|FPPassManager|PassManager|.*Pass\b)")
MLIR_PASSES = re.compile(r"^mlir::(PassManager|detail::OpToOpPassAdaptor)")
EMITTER = re.compile(r"Emit|Emitter|codegen", re.IGNORECASE)
WAITS = re.compile(r"BlockUntilReady|WaitForNotification|Await\b")  # a thread that waits for another
IDLE = re.compile(r"WaitForWork|WaitForNotification|CondVar|futex|pthread_cond|epoll_wait|poll$|select$|nanosleep")


@dataclass
class Frame:
    kind: str  # C | Python
    file: str
    line: int
    function: str
    library: str | None = None

    @property
    def name(self) -> str:
        """The function without its argument list and template noise, for a one-line summary."""
        return short(self.function)

    def where(self) -> str:
        if self.kind == "Python":
            return f"{self.file.rsplit('/', 1)[-1]}:{self.line} in {self.function}"
        return self.name


@dataclass
class Thread:
    tid: int
    name: str
    frames: list[Frame] = field(default_factory=list)  # outermost first, as pystack prints them
    locals: list[tuple[str, str]] = field(default_factory=list)  # (name, value) of module_name / name locals

    def innermost(self, kind: str | None = None) -> Frame | None:
        return next((f for f in reversed(self.frames) if kind is None or f.kind == kind), None)

    def matches(self, pattern: re.Pattern) -> list[Frame]:
        return [f for f in self.frames if pattern.search(f.function if f.kind == "C" else f.function + " " + f.file)]


def short(function: str) -> str:
    """`xla::cpu::EmitFusionKernel(mlir::MLIRContext&, ...)` -> `xla::cpu::EmitFusionKernel`."""
    depth, out = 0, []
    for char in function:
        if char in "(<":
            depth += 1
        elif char in ")>":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(char)
    text = re.sub(r"\s+const$", "", "".join(out).strip())  # a const method; then the return type goes
    return text.split(" ")[-1] or function[:120]


def parse(text: str) -> list[Thread]:
    """Every thread of one pystack report."""
    threads: list[Thread] = []
    for line in text.splitlines():
        head = _THREAD.match(line)
        if head:
            threads.append(Thread(int(head.group(1)), head.group(2)))
            continue
        if not threads:
            continue
        frame = _FRAME.match(line)
        if frame:
            kind, file, number, function, library = frame.groups()
            threads[-1].frames.append(Frame(kind, file, int(number), function, library))
            continue
        local = _LOCAL.match(line)
        if local:
            threads[-1].locals.append((local.group(1), local.group(2)))
    return threads
