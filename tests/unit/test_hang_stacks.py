"""Reading pystack's reports of a stuck process (run/hang/stacks.py, where.py): pure, on report-shaped text."""

from __future__ import annotations

from xlatools.records.hang import ModuleSeen, StuckProcess
from xlatools.run.hang.stacks import parse, short
from xlatools.run.hang.where import compile_phase, locate, odd_one_out

LIB = "(/venv/lib/python3.11/site-packages/jaxlib/libjax_common.so)"


def _c(function: str) -> str:
    return f'    (C) File "???", line 0, in {function} {LIB}'


def _py(file: str, line: int, function: str) -> str:
    return f'    (Python) File "{file}", line {line}, in {function}\n        source line'


def _thread(tid: int, name: str, *frames: str) -> str:
    return "\n".join([f"Traceback for thread {tid} ({name}) [] (most recent call last):", *frames])


MAIN_COMPILING = _thread(
    10,
    "python",
    _py("/w/prog.py", 18, "<module>"),
    _py("/venv/jax/_src/compiler.py", 362, "backend_compile_and_load"),
    _c("jax::PyClient::CompileAndLoad(jax::nb_class_ptr<jax::PyClient>, mlir::ModuleOp)"),
    _c("tsl::BlockUntilReady(tsl::AsyncValue*)"),
    _c("absl::Mutex::Block(absl::base_internal::PerThreadSynch*)"),
)
WORKER_EMITTING = _thread(
    11,
    "python",
    _c("Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)"),
    _c("xla::PjRtCpuClient::CompileAndLoad(mlir::ModuleOp, xla::CompileOptions)"),
    _c("xla::cpu::CpuCompiler::RunBackend(std::unique_ptr<xla::HloModule>, stream_executor::StreamExecutor*)"),
    _c("xla::cpu::ThunkEmitter::EmitHloInstruction(xla::HloInstruction const*)"),
    _c("xla::cpu::EmitFusionKernel(mlir::MLIRContext&, xla::HloFusionInstruction const&)"),
    _c("xla::SymbolicTileAnalysis::AnalyzeFromInstruction(std::unique_ptr<xla::SymbolicTiledHloInstruction>)"),
    _c("llvm::SmallVectorBase<unsigned int>::grow_pod(void*, unsigned long, unsigned long)"),
)
IDLE_WORKER = _thread(
    12,
    "tf_XLAEigen",
    _c("Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WaitForWork(Eigen::EventCount::Waiter*)"),
)
LOCALS = "\n".join(
    [
        _thread(10, "python", _py("/venv/jax/_src/compiler.py", 478, "compile_or_get_cached")),
        "      Locals:",
        '        module_name: "jit_chain"',
    ]
)


def test_frames_threads_and_locals_are_read_from_the_report():
    threads = parse("\n".join([MAIN_COMPILING, WORKER_EMITTING, IDLE_WORKER]))
    assert [(t.tid, t.name, len(t.frames)) for t in threads] == [
        (10, "python", 5),
        (11, "python", 7),
        (12, "tf_XLAEigen", 1),
    ]
    assert threads[0].innermost("Python").where() == "compiler.py:362 in backend_compile_and_load"
    assert threads[1].frames[-1].library.endswith("libjax_common.so")
    assert parse(LOCALS)[0].locals == [("module_name", "jit_chain")]
    assert short("xla::cpu::EmitFusionKernel(mlir::MLIRContext&, xla::HloFusionInstruction const&)") == (
        "xla::cpu::EmitFusionKernel"
    )
    assert short("void std::__invoke_impl<void, F&>(std::__invoke_other, F&)") == "std::__invoke_impl"


def test_a_compile_is_placed_on_the_worker_that_runs_it_not_the_thread_that_waits():
    where = locate(parse("\n".join([MAIN_COMPILING, WORKER_EMITTING, IDLE_WORKER])), parse(LOCALS))
    assert (where.state, where.phase, where.compiling) == ("compiling", "emitter", "jit_chain")
    assert where.where.startswith("compiling jit_chain: in XLA's emitter: xla::cpu::EmitFusionKernel")
    assert "SymbolicTileAnalysis::AnalyzeFromInstruction" in where.where


def test_the_innermost_telling_frame_decides_the_part_of_the_compiler():
    passes = parse(
        _thread(
            1,
            "python",
            _c("xla::cpu::CpuCompiler::RunHloPasses(xla::HloModule*)"),
            _c("xla::HloPassPipeline::RunPassesInternal<xla::HloModule>(xla::HloModule*)"),
            _c("xla::AlgebraicSimplifier::RunImpl(xla::HloModule*, absl::flat_hash_set<std::string_view> const&)"),
            _c("xla::HloInstruction::operand(long) const"),
        )
    )[0]
    assert compile_phase(passes) == (
        "hlo-passes",
        "pass AlgebraicSimplifier (xla::AlgebraicSimplifier::RunImpl > xla::HloInstruction::operand)",
    )
    llvm = parse(
        _thread(
            1,
            "python",
            _c("xla::cpu::CpuCompiler::RunBackend(std::unique_ptr<xla::HloModule>)"),
            _c("llvm::legacy::PassManager::run(llvm::Module&)"),
            _c("llvm::SelectionDAGISel::runOnMachineFunction(llvm::MachineFunction&)"),
        )
    )[0]
    assert compile_phase(llvm)[0] == "llvm"


def test_a_wait_in_a_collective_counts_on_an_executing_thread_only():
    executing = _thread(
        20,
        "python",
        _py("/venv/jax/experimental/multihost_utils.py", 134, "_handle_array_process_allgather"),
        _c("xla::PjRtCpuLoadedExecutable::Execute(absl::Span<>, xla::ExecuteOptions const&)"),
        _c("xla::cpu::ThunkExecutor::Execute(xla::cpu::Thunk::ExecuteParams const&)"),
        _c("xla::cpu::AllGatherThunk::Execute(xla::cpu::Thunk::ExecuteParams const&)"),
        _c("gloo::allgather(gloo::AllgatherOptions&)"),
        _c("gloo::transport::tcp::UnboundBuffer::waitSend(int*, std::chrono::duration<long>)"),
    )
    transport = _thread(21, "python", _c("gloo::transport::tcp::Loop::run()"))
    python_loop = _thread(30, "python", _py("/w/stuck.py", 11, "next_batch"), _c("__select (libc.so.6)"))
    waiting = locate(parse("\n".join([executing, transport])), [])
    assert waiting.state == "executing"
    assert waiting.collective == "xla::cpu::AllGatherThunk::Execute > gloo::allgather"
    looping = locate(parse("\n".join([python_loop, transport])), [])
    assert (looping.state, looping.collective, looping.where) == (
        "python",
        None,
        "in Python at stuck.py:11 in next_batch",
    )


def _process(pid, index, state, where, collective=None, executions=None, compiled=None):
    return StuckProcess(
        pid=pid,
        process=index,
        state=state,
        where=where,
        collective=collective,
        executions=executions,
        last_compiled=ModuleSeen(name="jit_step", m=compiled, source="observer") if compiled else None,
    )


def test_the_odd_one_out_is_the_process_outside_the_collective_the_others_wait_in():
    procs = [
        _process(100, 0, "executing", "executing, in a collective (AllGather)", "AllGather"),
        _process(101, 1, "python", "in Python at stuck.py:11 in next_batch"),
        _process(102, 2, "executing", "executing, in a collective (AllGather)", "AllGather"),
    ]
    odd, line = odd_one_out(procs)
    assert odd == [101]
    assert line.startswith("process 0 (pid 100), process 2 (pid 102) wait in a collective (AllGather)")
    assert "process 1 (pid 101) is not: in Python at stuck.py:11 in next_batch" in line


def test_behind_by_executions_or_compiles_when_no_collective_tells():
    odd, line = odd_one_out(
        [
            _process(1, 0, "python", "in Python at a.py:1 in f", executions=7),
            _process(2, 1, "python", "x", executions=5),
        ]
    )
    assert odd == [2] and "process 1 (pid 2) is behind: 5 executions, the others up to 7" in line
    odd, _ = odd_one_out([_process(1, 0, "compiling", "c", compiled=4), _process(2, 1, "compiling", "c", compiled=3)])
    assert odd == [2]
    same, line = odd_one_out([_process(1, 0, "compiling", "c"), _process(2, 1, "compiling", "c")])
    assert same == [] and line == "every process is at the same place: c"
    alone, line = odd_one_out([_process(5, None, "compiling", "compiling jit_f: in LLVM: llvm::legacy::PassManager")])
    assert alone == [] and line == "pid 5: compiling jit_f: in LLVM: llvm::legacy::PassManager"


def test_the_observers_files_name_the_last_modules_and_count_executions(tmp_path):
    """The observer's status and events files as docs/metrics.md specifies them (issue 38's observer writes them)."""
    import json
    import time

    from xlatools.run.hang.observer import last_observer_event, observer_executions, read_observer

    folder = tmp_path / "observer"
    folder.mkdir()
    status = {
        "v": 1,
        "pid": 41,
        "process": 1,
        "t": 1.0,
        "state": "compiling",
        "m": 3,
        "name": "jit_step",
        "since": 0.5,
        "last_compiled": {"m": 2, "name": "jit_init", "t": 0.2},
        "last_executed": {"m": 2, "name": "jit_init", "t": 0.3},
    }
    (folder / "41.status.json").write_text(json.dumps(status) + " " * 200)  # padded, rewritten in place
    seen = read_observer(tmp_path, 41)
    assert seen is not None and seen.state == "compiling"
    assert (seen.current.name, seen.current.m, seen.current.source) == ("jit_step", 3, "observer")
    assert seen.last_compiled.name == "jit_init" and seen.last_executed.m == 2
    assert read_observer(tmp_path, 42) is None
    events = [
        {"ev": "start", "t": 0.0, "v": 1},
        {"ev": "exec_first", "t": 0.1, "m": 1},
        {"ev": "calls", "t": 0.2, "m": 1, "first": 0, "wall": [0.1, 0.1, 0.1], "cpu": [0.1, 0.1, 0.1]},
        {"ev": "unknown-kind", "t": 0.3},
    ]
    (folder / "41.events.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\nnot json\n")
    assert observer_executions(tmp_path, 41) == 3 and observer_executions(tmp_path, 7) is None
    moved = last_observer_event(tmp_path)
    assert moved is not None and abs(moved - time.monotonic()) < 5
    assert last_observer_event(tmp_path / "none") is None
