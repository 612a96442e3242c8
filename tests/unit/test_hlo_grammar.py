"""The one HLO text grammar and the one dump-name grammar (xlatools/hlo/), on real files: the H200 dumps in
../shared/fixtures/gpu-h200 (jaxlib 0.11.2 + CUDA 13) and the CPU texts of tests/fixtures/hlo (0.4.30 to 0.12)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import REPO, require
from xlatools.hlo.dump_names import DumpKind, parse_dump_name, read_bare_name
from xlatools.hlo.grammar import (
    LineKind,
    attribute,
    closing_bracket,
    iter_computations,
    parse_instruction,
    remove_attribute,
    scan_lines,
    set_attribute,
    split_top_level,
)
from xlatools.hlo.values import backend_config, operand_precision

GPU = REPO.parent / "shared" / "fixtures" / "gpu-h200"
# Every HLO text among the tests' fixtures (jaxlib 0.4.30 to 0.12 dumps, bundles, replay and debug sessions).
CPU_TEXTS = sorted(
    p for p in (REPO / "tests" / "fixtures").rglob("*.txt") if p.read_text(errors="replace").startswith("HloModule")
)
# What each file of an H200 dump is, by what follows the module name.
GPU_TAILS = {
    "before_optimizations.txt": DumpKind.BEFORE_OPTIMIZATIONS,
    "sm_9.0a_gpu_after_optimizations.txt": DumpKind.AFTER_OPTIMIZATIONS,
    "sm_9.0a_gpu_after_optimizations-buffer-assignment.txt": DumpKind.BUFFER_ASSIGNMENT,
    "sm_9.0a_gpu_after_optimizations-buffer-assignment-values.txt": DumpKind.BUFFER_ASSIGNMENT_VALUES,
    "sm_9.0a_gpu_after_optimizations-live-range.txt": DumpKind.LIVE_RANGE,
    "sm_9.0a_gpu_after_optimizations-memory-usage-report.txt": DumpKind.MEMORY_USAGE_REPORT,
    "after_spmd_partitioner.txt": DumpKind.AFTER_SPMD_PARTITIONER,
    "before_config_assignment.txt": DumpKind.BEFORE_CONFIG_ASSIGNMENT,
    "thunk_sequence.txt": DumpKind.THUNK_SEQUENCE,
    "thunk_sequence_after_thunk_passes.txt": DumpKind.THUNK_SEQUENCE,
    "thunk_metadata.txt": DumpKind.THUNK_METADATA,
    "autotune_results.pbtxt": DumpKind.AUTOTUNE_RESULTS,
    "gpu_target_config.pbtxt": DumpKind.GPU_TARGET_CONFIG,
    "config.pbtxt": DumpKind.COMPILE_CONFIG,
    "debug_options": DumpKind.DEBUG_OPTIONS,
    "module.mlir": DumpKind.MODULE_MLIR,
    "compile_options.textproto": DumpKind.COMPILE_OPTIONS,
    "topology.textproto": DumpKind.TOPOLOGY,
}


def gpu_fixtures() -> Path:
    require("gpu_fixtures", GPU.is_dir(), f"{GPU} (the recorded H200 dumps, ../shared from the repository root)")
    return GPU


def _dump_path(path: str) -> str | None:
    """The part of a path from its first `module_<id>.` folder or file on."""
    parts = path.split("/")
    first = next((i for i, part in enumerate(parts) if re.match(r"module_\d+\.", part)), None)
    return None if first is None else "/".join(parts[first:])


def gpu_dump_names() -> set[str]:
    """Every dump path of the H200 fixtures: the files kept and those the manifests list."""
    root = gpu_fixtures()
    paths = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    for manifest in root.rglob("manifest.json"):
        paths += re.findall(r'"([^"]*module_\d+\.[^"]*)"', manifest.read_text())
    return {found for path in paths if (found := _dump_path(path))}


def test_every_gpu_dump_name_parses_to_its_kind():
    names = gpu_dump_names()
    assert len(names) > 700
    kinds = set()
    for name in names:
        parsed = parse_dump_name(name)
        assert parsed is not None, name
        expected = next((kind for tail, kind in GPU_TAILS.items() if parsed.tail == tail), None)
        if parsed.kind is DumpKind.MODULE_FOLDER:
            continue
        assert parsed.kind is expected, (name, parsed.kind, parsed.tail)
        assert parsed.name_certain and parsed.module_name.startswith("jit_"), name
        assert name.startswith(f"module_{parsed.module_id:04d}.{parsed.module_name}"), name
        if parsed.kind in (DumpKind.AFTER_OPTIMIZATIONS, DumpKind.BUFFER_ASSIGNMENT):
            assert parsed.platform == "sm_9.0a_gpu"
        kinds.add(parsed.kind)
    assert kinds == set(GPU_TAILS.values())
    step = parse_dump_name("module_110484.jit_step.thunk_sequence_after_thunk_passes.txt")
    assert (step.module_id, step.module_name, step.detail) == (110484, "jit_step", "after_thunk_passes")


@pytest.mark.parametrize(
    "name, kind, fields",
    [
        ("module_0662.jit_f.ptx", DumpKind.PTX, {"detail": None}),
        (
            "module_0662.jit_f.gemm_fusion_dot.1.ttir.txt",
            DumpKind.TRITON_IR,
            {"detail": "gemm_fusion_dot.1", "fmt": "txt"},
        ),
        ("module_0662.jit_f.ir-no-opt.ll", DumpKind.LLVM_IR, {"detail": None}),
        ("module_0662.jit_f.loop_add_fusion.ll", DumpKind.LLVM_IR, {"detail": "loop_add_fusion"}),
        (
            "p1/module_0004.jit_f.before_optimizations.txt",
            DumpKind.BEFORE_OPTIMIZATIONS,
            {"process": 1, "module_id": 4},
        ),
        ("p0/module_0004.jit_f/module.mlir", DumpKind.MODULE_MLIR, {"process": 0, "module_name": "jit_f"}),
        (
            "1712345.module_0004.jit_Model.apply.sm_9.0_gpu_after_optimizations.txt",
            DumpKind.AFTER_OPTIMIZATIONS,
            {
                "timestamp": 1712345,
                "module_name": "jit_Model.apply",
                "platform": "sm_9.0_gpu",
                "stem": "1712345.module_0004.jit_Model.apply",
            },
        ),
        (
            "module_0000.jit_f.0003.fusion.after_priority-fusion.before_dce.hlo.pb",
            DumpKind.PASS_STEP,
            {"step": 3, "pipeline": "fusion", "pass_name": "priority-fusion", "next_pass": "dce", "fmt": "hlo.pb"},
        ),
        ("module_0000.jit_f.snapshot.-1075371339.pb", DumpKind.SNAPSHOT, {"detail": "-1075371339"}),
        (
            "module_0002.jit_g.execution_0001.hlo_unoptimized_snapshot.txt",
            DumpKind.UNOPTIMIZED_SNAPSHOT,
            {"fmt": "txt"},
        ),
        (
            "module_0002.SyncTensorsGraph.124.cpu_after_optimizations.txt",
            DumpKind.AFTER_OPTIMIZATIONS,
            {"module_name": "SyncTensorsGraph.124"},
        ),
        (
            "module_0000.a_inference_f_15__XlaMustCompile_true_config_proto_1_executor_type_2_.1.before_optimizations.txt",
            DumpKind.BEFORE_OPTIMIZATIONS,
            {"module_name": "a_inference_f_15__XlaMustCompile_true_config_proto_1_executor_type_2_.1"},
        ),
    ],
)
def test_names_not_in_the_gpu_fixtures(name, kind, fields):
    parsed = parse_dump_name(name)
    assert parsed is not None and parsed.kind is kind
    assert {key: getattr(parsed, key) for key in fields} == fields


def test_dump_names_among_the_fixtures():
    found = [
        (name, path.is_dir())
        for path in (REPO / "tests" / "fixtures").rglob("*")
        if (name := _dump_path(path.relative_to(REPO).as_posix()))
    ]
    kinds = [parse_dump_name(name, folder=is_dir) for name, is_dir in found]
    assert len(found) > 10 and all(k is not None and k.kind is not DumpKind.OTHER for k in kinds), found


def test_kernel_names_need_the_module_name():
    name = "module_0000.SyncTensorsGraph.19.broadcast.11_elemental_kernel_module.ir-no-opt.ll"
    alone = parse_dump_name(name)
    assert alone.kind is DumpKind.LLVM_IR and not alone.name_certain  # the dot after the name cannot be told apart
    hinted = parse_dump_name(name, module_name="SyncTensorsGraph.19")
    assert (hinted.module_name, hinted.name_certain) == ("SyncTensorsGraph.19", True)
    assert hinted.detail.startswith("broadcast.11_elemental_kernel_module")
    assert parse_dump_name("notes.txt") is None and parse_dump_name("p0") is None
    assert read_bare_name("f.snapshot.12.pb") == ("f", DumpKind.SNAPSHOT)
    assert read_bare_name("snapshot.12.pb") == ("", DumpKind.SNAPSHOT)
    assert read_bare_name("mine.hlo") == ("mine", DumpKind.OTHER)


def hlo_texts() -> list[Path]:
    root = gpu_fixtures()
    gpu = [
        p for p in root.rglob("module_*.txt") if (found := parse_dump_name(p.name)) is not None and found.is_text_hlo
    ]
    assert len(gpu) > 40
    return gpu + CPU_TEXTS


def test_every_instruction_line_of_real_dumps_parses():
    lines = precise = 0
    for path in hlo_texts():
        text = path.read_text()
        kinds = [kind for kind, _ in scan_lines(text.splitlines())]
        assert LineKind.OTHER not in kinds, path
        assert kinds.count(LineKind.COMPUTATION) == kinds.count(LineKind.END) > 0, path
        computed = sum(len(c.lines) for c in iter_computations(text))
        assert computed == kinds.count(LineKind.INSTRUCTION), path
        for kind, line in scan_lines(text.splitlines()):
            if kind is not LineKind.INSTRUCTION:
                continue
            lines += 1
            inst = parse_instruction(line)
            assert inst is not None and inst.opcode and inst.shape, line
            for key, value in inst.attributes.items():
                assert set_attribute(line, key, value) == line and attribute(line, key) == value
            if "backend_config" in inst.attributes and inst.attributes["backend_config"].startswith("{"):
                assert isinstance(backend_config(inst.attributes["backend_config"]), dict), line
            if inst.opcode in ("dot", "convolution"):
                precise += 1
                changed = set_attribute(line, "operand_precision", "{highest,highest}")
                assert operand_precision(attribute(changed, "operand_precision")) == ["highest", "highest"]
                assert remove_attribute(changed, "operand_precision") == remove_attribute(line, "operand_precision")
    assert lines > 3000 and precise > 20


def test_attributes_kept_byte_for_byte():
    line = (
        "  ROOT %dot.3 = f32[2,2]{1,0} dot(f32[2,3]{1,0} %a, f32[3,2]{1,0} %b), lhs_contracting_dims={1}, "
        'rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot, \\"x\\"" source_line=3}, '
        'backend_config={"sizes":["64"],"x":{"y":"}"}}  '
    )
    inst = parse_instruction(line)
    assert (inst.name, inst.opcode, inst.operands, inst.is_root) == ("dot.3", "dot", ["a", "b"], True)
    assert list(inst.attributes) == ["lhs_contracting_dims", "rhs_contracting_dims", "metadata", "backend_config"]
    assert inst.metadata == {"op_name": 'jit(f)/dot, \\"x\\"', "source_line": "3"}
    assert backend_config(inst.attributes["backend_config"]) == {"sizes": ["64"], "x": {"y": "}"}}
    assert set_attribute(line, "algorithm", "dot_f32_f32_f32").endswith(", algorithm=dot_f32_f32_f32  ")
    swapped = set_attribute(line, "lhs_contracting_dims", "{0}")
    assert swapped == line.replace("lhs_contracting_dims={1}", "lhs_contracting_dims={0}")
    assert remove_attribute(line, "metadata") == line.replace(
        ', metadata={op_name="jit(f)/dot, \\"x\\"" source_line=3}', ""
    )
    old_style = '  add.15 = f32[] add(Arg_0.13, Arg_1.14), metadata={op_type="add" source_file="/a.py" source_line=2}'
    assert parse_instruction(old_style).operands == ["Arg_0.13", "Arg_1.14"]
    assert parse_instruction("ENTRY %main.5 (x.1: f32[2]) -> f32[2] {") is None
    assert parse_instruction("  %a = f32[] add(%b, %c") is None  # never closed
    assert json.loads(json.dumps(backend_config('"{\\"a\\":1}"'))) == {"a": 1}


def test_brackets_and_strings():
    text = r'x(a, "b)", {c, [d]}) tail'
    assert closing_bracket(text, 1) == len(r'x(a, "b)", {c, [d]})')
    assert closing_bracket("(a, (b)", 0) is None
    assert split_top_level(r'a="C:\\", b={x, y}, c="say \"hi, there\""') == [
        r'a="C:\\"',
        "b={x, y}",
        r'c="say \"hi, there\""',
    ]
    assert split_top_level("a b {c d} e", " ") == ["a", "b", "{c d}", "e"]
