"""replay/as_run.py: is a replay the run's own module (pure parts, on text shaped like jaxlib 0.4.26's dumps)."""

from __future__ import annotations

from xlatools.replay.as_run import difference, read_debug_options, run_files
from xlatools.replay.sources import ModuleSource

RUN = """HloModule jit_f, entry_computation_layout={(f32[3,1,1]{2,1,0})->f32[3,1,1]{2,1,0}}, allow_spmd_sharding_propagation_to_parameters={true}, allow_spmd_sharding_propagation_to_output={true}

ENTRY main.25 {
  Arg_0.1 = f32[3,1,1]{2,1,0} parameter(0)
  ROOT custom-call = f32[3,1,1]{2,1,0} custom-call(Arg_0.1), custom_call_target="__onednn$softmax", metadata={op_name="jit(f)/jit(main)/div"}
}
"""


def test_the_same_module_printed_by_another_printer_is_the_runs():
    # the replay's printer: %-names, no sharding-propagation flags, other metadata, a frontend attribute
    replay = (
        "HloModule jit_f, entry_computation_layout={(f32[3,1,1]{2,1,0})->f32[3,1,1]{2,1,0}}, "
        "frontend_attributes={xla.sdy.meshes={}}\n\nENTRY %main.3 (Arg_0.1: f32[3,1,1]) -> f32[3,1,1] {\n"
        "  %Arg_0.1 = f32[3,1,1]{2,1,0} parameter(0)\n  ROOT %custom-call.2 = f32[3,1,1]{2,1,0} custom-call("
        '%Arg_0.1), custom_call_target="__onednn$softmax"\n}\n'
    )
    assert difference(RUN, replay) is None


def test_a_lost_rewrite_is_named():
    replay = """HloModule jit_f, entry_computation_layout={(f32[3,1,1]{2,1,0})->f32[3,1,1]{2,1,0}}

ENTRY main.19 {
  Arg_0.1 = f32[3,1,1]{2,1,0} parameter(0)
  ROOT exponential.0 = f32[3,1,1]{2,1,0} exponential(Arg_0.1)
}
"""
    said = difference(RUN, replay)
    assert said and 'custom_call_target="__onednn$softmax"' in said and "only in the run's" in said
    # what was compiled differently in the header counts (an aliased output: donation)
    aliased = RUN.replace("allow_spmd", "input_output_alias={ {}: (0, {}, may-alias) }, allow_spmd", 1)
    assert difference(aliased, RUN) is not None


def test_run_files_and_debug_options(tmp_path):
    before = tmp_path / "module_0003.jit_f.before_optimizations.txt"
    before.write_text("HloModule jit_f")
    (tmp_path / "module_0003.jit_f.cpu_after_optimizations.txt").write_text(RUN)
    (tmp_path / "module_0003.jit_f.cpu_after_optimizations-buffer-assignment.txt").write_text("x")
    (tmp_path / "module_0003.jit_f.debug_options").write_text(
        'xla_cpu_enable_fast_min_max: false\nxla_dump_to: "/tmp/d"\nxla_cpu_max_isa: "AVX2"\nnested {\n'
    )
    files = run_files(ModuleSource(name="jit_f", id=3, text=before).run_stem)  # the stem the text names
    assert files.optimized.name == "module_0003.jit_f.cpu_after_optimizations.txt"
    assert read_debug_options(files.debug_options) == {
        "xla_cpu_enable_fast_min_max": "false",
        "xla_cpu_max_isa": "AVX2",
    }
    assert run_files(tmp_path / "module_0003.jit_f") == files  # a module.mlir or jax IR file's module: its stem
    assert run_files(ModuleSource(name="o", id=None, text=tmp_path / "other.txt").run_stem).optimized is None
    assert run_files(None).optimized is None and read_debug_options(None) == {}
