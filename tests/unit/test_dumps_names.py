"""Dump-name parsing on synthetic trees named like real jaxlib 0.10.2 / 0.4.30 / GPU dumps."""

from pathlib import Path

import pytest

from xlatools.run.dumps import index_dump, pass_details, resolve_dump_dir
from xlatools.errors import UsageError

HLO_BEFORE = """HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY %main.1 (x.1: f32[2]) -> f32[2] {
  %x.1 = f32[2]{0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[2]{0} broadcast(%c), dimensions={}
  ROOT %m = f32[2]{0} multiply(%x.1, %b)
}
"""
HLO_AFTER = HLO_BEFORE.replace("  %c = f32[] constant(2)\n", "")


def make(root: Path, names: dict[str, str]) -> Path:
    for name, text in names.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_new_layout_even_ids_folders_and_snapshots(tmp_path):
    make(
        tmp_path,
        {
            "module_0000.jit_f.before_optimizations.txt": HLO_BEFORE,
            "module_0000.jit_f.cpu_after_optimizations.txt": HLO_AFTER,
            "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt": "x",
            "module_0000.jit_f.cpu_after_optimizations-memory-usage-report.txt": "x",
            "module_0000.jit_f.snapshot.-1075371339.pb": "x",
            "module_0000.jit_f.snapshot.160189697.pb": "x",
            "module_0000.jit_f.debug_options": "x",
            "module_0000.jit_f.broadcast_add_fusion_kernel_module.ir-no-opt.ll": "x",
            "module_0000.jit_f.obj-file.broadcast_add_fusion_kernel_module.o": "x",
            "module_0000.jit_f/module.mlir": "x",
            "module_0002.jit__reduce_sum.before_optimizations.txt": HLO_BEFORE,
            "module_0002.jit__reduce_sum/compile_options.textproto": "x",
        },
    )
    index = index_dump(tmp_path)
    assert index.layout == "per-module folders"
    assert sorted(index.modules) == [0, 2]
    f = index.modules[0]
    assert f.name == "jit_f" and f.platform == "cpu" and f.snapshots == 2
    assert {
        "before_optimizations",
        "after_optimizations",
        "snapshots",
        "llvm_ir",
        "object_code",
        "debug_options",
        "module_folder",
        "buffer-assignment",
        "memory-usage-report",
    } <= f.stages
    assert (f.instructions_before, f.instructions_after) == (4, 3)
    assert index.totals()["files"] == 12
    assert index.modules[2].name == "jit__reduce_sum"
    assert index.find("0002").id == 2 and index.find("jit_f").id == 0


def test_old_layout_contiguous_ids_and_pass_steps(tmp_path):
    make(
        tmp_path,
        {
            "module_0000.jit_f.before_optimizations.txt": HLO_BEFORE,
            "module_0000.jit_f.0000.sharding-removal.after_pipeline-start.before_sharding-remover.txt": HLO_BEFORE,
            "module_0000.jit_f.0000.sharding-removal.after_pipeline-start.before_sharding-remover.html": "x",
            "module_0000.jit_f.0001.simplification.after_algsimp.before_dce.txt": HLO_AFTER,
            "module_0000.jit_f.0002.copy-insertion.after_adding_copies_to_resolve_interference.txt": HLO_AFTER,
            "module_0000.jit_f.o": "x",
            "module_0001.jit_g.before_optimizations.txt": HLO_BEFORE,
        },
    )
    index = index_dump(tmp_path)
    assert index.layout == "flat" and sorted(index.modules) == [0, 1]
    steps = pass_details(index, index.find("jit_f"))
    assert [(s.step, s.pipeline, s.pass_name, s.next_pass) for s in steps] == [
        (0, "sharding-removal", "pipeline-start", "sharding-remover"),
        (1, "simplification", "algsimp", "dce"),
        (2, "copy-insertion", "adding_copies_to_resolve_interference", None),
    ]
    assert [s.changed for s in steps] == [False, True, False]
    assert [s.instructions for s in steps] == [4, 3, 3]
    assert "object_code" in index.modules[0].stages


def test_dotted_names_gpu_platform_and_timestamps(tmp_path):
    make(
        tmp_path,
        {
            "1712345.module_0004.jit_Model.apply.before_optimizations.txt": HLO_BEFORE,
            "1712345.module_0004.jit_Model.apply.sm_9.0_gpu_after_optimizations.txt": HLO_AFTER,
            "1712345.module_0004.jit_Model.apply.0003.fusion.after_priority-fusion.before_dce.txt": HLO_AFTER,
        },
    )
    module = index_dump(tmp_path).modules[4]
    assert module.name == "jit_Model.apply"
    assert module.platform == "sm_9.0_gpu"
    assert module.instructions_after == 3
    assert module.steps[0].pass_name == "priority-fusion"


def test_find_errors(tmp_path):
    make(
        tmp_path,
        {
            "module_0000.jit_f.before_optimizations.txt": HLO_BEFORE,
            "module_0001.jit_f.before_optimizations.txt": HLO_BEFORE,
        },
    )
    index = index_dump(tmp_path)
    with pytest.raises(UsageError, match="2 modules are named 'jit_f': 0000, 0001"):
        index.find("jit_f")
    with pytest.raises(UsageError, match="no module 'jit_g'"):
        index.find("jit_g")


def test_resolve_dump_dir(tmp_path):
    bundle = tmp_path / "bundle"
    make(bundle, {"manifest.json": "{}", "xla_dump/module_0000.jit_f.before_optimizations.txt": HLO_BEFORE})
    assert resolve_dump_dir(bundle) == bundle / "xla_dump"
    nodump = tmp_path / "nodump"
    make(nodump, {"manifest.json": "{}"})
    with pytest.raises(UsageError, match="did not dump"):
        resolve_dump_dir(nodump)
    with pytest.raises(UsageError, match="no XLA dump files"):
        resolve_dump_dir(tmp_path)
    with pytest.raises(UsageError, match="no such file"):
        resolve_dump_dir(tmp_path / "absent")


def test_jaxlib_0_12_names(tmp_path):
    """File names seen in a real jaxlib 0.12.0.1 CPU dump (smoke:dot, --preset full --preset proto)."""
    make(
        tmp_path,
        {
            "module_0000.jit_f.before_optimizations.txt": HLO_BEFORE,
            "module_0000.jit_f.before_optimizations.hlo.pb": "x",
            "module_0000.jit_f.before_optimizations.html": "x",
            "module_0000.jit_f.cpu_after_optimizations.txt": HLO_AFTER,
            "module_0000.jit_f.cpu_after_optimizations.hlo.pb": "x",
            "module_0000.jit_f.cpu_after_optimizations.html": "x",
            "module_0000.jit_f.cpu_after_optimizations.top_level.html": "x",
            "module_0000.jit_f.cpu_after_optimizations-buffer-assignment-values.txt": "x",
            "module_0000.jit_f.cpu_after_optimizations-live-range.txt": "x",
            "module_0000.jit_f.cpu_after_optimizations-memory-usage-report.pb": "x",
            "module_0000.jit_f.obj-file.broadcast_add_fusion_kernel_module.o": "x",
            "module_0000.jit_f.snapshot.-1136853476.pb": "x",
            "module_0000.jit_f.0000.async-collective.after_pipeline-start.before_async-collective-custom-call-rewriter.txt": HLO_BEFORE,
            "module_0000.jit_f.0000.async-collective.after_pipeline-start.before_async-collective-custom-call-rewriter.hlo.pb": "x",
            "module_0000.jit_f/compile_options.pb": "x",
            "module_0000.jit_f/topology.pb": "x",
            "module_0000.jit_f/module.mlir": "x",
            # --xla_dump_hlo_unoptimized_snapshots (text without --xla_dump_hlo_as_proto)
            "module_0002.jit_g.execution_0000.hlo_unoptimized_snapshot.txt": "x",
            "module_0004.jit_h.execution_0001.hlo_unoptimized_snapshot.pb": "x",
        },
    )
    index = index_dump(tmp_path)
    assert index.layout == "per-module folders" and sorted(index.modules) == [0, 2, 4]
    f = index.modules[0]
    assert (f.name, f.short_name, f.origin, f.platform) == ("jit_f", "jit_f", "jax", "cpu")
    assert {
        "before_optimizations",
        "after_optimizations",
        "snapshots",
        "object_code",
        "module_folder",
        "passes",
        "buffer-assignment-values",
        "live-range",
        "memory-usage-report",
    } <= f.stages
    assert "other" not in f.stages and f.snapshots == 1 and len(f.steps) == 1
    for module_id in (2, 4):
        assert index.modules[module_id].stages == {"snapshots"} and index.modules[module_id].snapshots == 1
    assert index.modules[2].name == "jit_g"


TF_JIT = "a_inference_f_15__XlaMustCompile_true_config_proto_13561319589895757934_executor_type_11160318154034397263_.1"
TF_CLUSTER = (
    "cluster_0__XlaCompiledKernel_true__XlaHasReferenceVars_false__XlaNumConstantArgs_0__XlaNumResourceArgs_0_.1"
)


def test_frontend_module_names(tmp_path):
    """TensorFlow (2.21, jit_compile and auto-clustering) and PyTorch/XLA (2.9) names, as seen in real dumps."""
    make(
        tmp_path,
        {
            f"module_0000.{TF_JIT}.before_optimizations.txt": HLO_BEFORE,
            f"module_0000.{TF_JIT}.cpu_after_optimizations.txt": HLO_AFTER,
            f"module_0000.{TF_JIT}.MatMul.2_elemental_kernel_module.ir-no-opt.ll": "x",
            f"module_0000.{TF_JIT}.broadcast_multiply_fusion_kernel_module-post-lowering.mlir": "x",
            f"module_0000.{TF_JIT}.broadcast_multiply_fusion_kernel_module-pre-optimization.mlir": "x",
            f"module_0001.{TF_CLUSTER}.before_optimizations.txt": HLO_BEFORE,
            f"module_0001.{TF_CLUSTER}.cpu_after_optimizations-buffer-assignment.txt": "x",
            "module_0002.SyncTensorsGraph.124.before_optimizations.txt": HLO_BEFORE,
            "module_0002.SyncTensorsGraph.124.concatenate_bitcast_fusion.1_kernel_module-post-optimization.mlir": "x",
        },
    )
    index = index_dump(tmp_path)
    tf_jit, cluster, torch = (index.modules[i] for i in (0, 1, 2))
    assert (tf_jit.name, tf_jit.short_name, tf_jit.origin) == (TF_JIT, "f", "tf.function(jit_compile=True)")
    assert {"llvm_ir", "kernel_mlir", "after_optimizations"} <= tf_jit.stages and "other" not in tf_jit.stages
    assert (cluster.short_name, cluster.origin) == ("cluster_0", "tensorflow auto-clustering")
    assert (torch.name, torch.origin) == ("SyncTensorsGraph.124", "torch_xla")
    assert "kernel_mlir" in torch.stages
    assert index.find("f") is tf_jit and index.find("cluster_0") is cluster and index.find(TF_JIT) is tf_jit


def test_gpu_files_of_a_module_are_named(tmp_path):
    """The H200's real file names (../shared/fixtures/gpu-h200) and the emitter's PTX, LLVM IR and Triton IR."""
    from xlatools.run.dumps import index_dump

    real = Path(__file__).resolve().parents[2] / "../shared/fixtures/gpu-h200/flax-cnn/xla_dump"
    if real.is_dir():
        module = index_dump(real).find("jit_step")
        assert sorted(module.gpu_files) == ["autotune_results", "gpu_target_config", "thunk_metadata", "thunk_sequence"]
        assert module.platform == "sm_9.0a_gpu"
    for name in (
        "module_0001.jit_f.before_optimizations.txt",
        "module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt",
        "module_0001.jit_f.loop_add_fusion.ptx",
        "module_0001.jit_f.loop_add_fusion.ll",
        "module_0001.jit_f.gemm_fusion_dot.ttir.txt",
        "module_0001.jit_f.thunk_sequence.txt",
        "module_0001.jit_f.autotune_results.pbtxt",
        "module_0002.jit_g.ir-no-opt.ll",
    ):
        (tmp_path / name).write_text("x\n")
    index = index_dump(tmp_path)
    f, g = index.find("jit_f"), index.find("jit_g")
    assert {k: len(v) for k, v in f.gpu_files.items()} == {
        "ptx": 1,
        "llvm_ir": 1,
        "triton_ir": 1,
        "thunk_sequence": 1,
        "autotune_results": 1,
    }
    assert g.gpu_files == {} and "llvm_ir" in g.stages  # the CPU's LLVM IR is not a GPU file
