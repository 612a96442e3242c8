"""TensorFlow XLA and PyTorch/XLA through --python, for real, on the CPU.

CI makes the interpreters with scripts/make-tf-venv.sh and scripts/make-torch-xla-venv.sh,
sets XLATOOLS_TF_PYTHON / XLATOOLS_TORCH_XLA_PYTHON and XLATOOLS_REQUIRE_TENSORFLOW=1 /
XLATOOLS_REQUIRE_TORCH_XLA=1, so these cannot pass by skipping there.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import bundles, check_dump_grammar, manifest

TF_JIT = """import tensorflow as tf

@tf.function(jit_compile=True)
def f(x, y):
    return tf.nn.relu(tf.matmul(x, y)) * 2.0

print("result", float(tf.reduce_sum(f(tf.ones([4, 3]), tf.ones([3, 2])))))
"""

TF_AUTO = """import tensorflow as tf

@tf.function
def g(x, y):
    return tf.nn.relu(tf.matmul(x, y)) * 2.0 + 1.0

print("result", float(tf.reduce_sum(g(tf.ones([4, 3]), tf.ones([3, 2])))))
"""

TORCH = """import torch
import torch_xla

device = torch_xla.device()
x = torch.ones(4, 3, device=device)
y = torch.ones(3, 2, device=device)
z = (x @ y).relu() * 2.0
torch_xla.sync()
print("result", z.cpu().sum().item())
"""


def _inspect(xl, bundle) -> dict:
    result = xl("inspect", str(bundle), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.tensorflow
def test_tf_jit_compile_dumps_graphs_and_names(xl, tmp_path, tf_python):
    (tmp_path / "tfprog.py").write_text(TF_JIT)
    result = xl("run", "tfprog.py", "--preset", "tf-clustering", "--dump", "--python", tf_python, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "result 48.0" in result.stdout
    bundle = tmp_path / "artifacts" / "latest"
    data = manifest(bundle)
    assert data["status"] == "ok" and data["frontend"]["name"] == "tensorflow"  # detected: no jax in that venv
    assert data["frontend"]["version"].startswith("2.") and "tensorflow git" in data["frontend"]["xla_source"]
    assert data["frontend"]["tf_xla_flags"] == ["--tf_xla_clustering_debug"]
    assert list((bundle / "tf_graphs").glob("*.pbtxt"))  # TF_DUMP_GRAPH_PREFIX went into the bundle
    assert {"before_optimizations", "kernel_mlir", "llvm_ir"} <= set(check_dump_grammar(bundle / "xla_dump"))
    modules = _inspect(xl, bundle)["modules"]
    f = next(m for m in modules if m["short_name"] == "f")
    assert f["origin"] == "tf.function(jit_compile=True)" and f["name"].startswith("a_inference_f_")
    assert {"before_optimizations", "after_optimizations"} <= set(f["stages"])
    assert f["instructions_before"] and f["instructions_after"]
    one = xl("inspect", str(bundle), "--module", "f", "--json")  # the short name finds it
    assert one.returncode == 0 and json.loads(one.stdout)["module"]["id"] == f["id"], one.stderr
    assert f"{f['id']:04d}  f  " in result.stderr  # the run's module table shows the short name

    # HLO is HLO: the module TensorFlow compiled replays in a jax interpreter (this one).
    replayed = xl("replay", str(bundle), "--module", "f", "--json", "--out", "replays")
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    [module] = json.loads(replayed.stdout)["modules"]
    assert module["outcome"] == "ok" and module["fingerprint"]


@pytest.mark.tensorflow
def test_tf_auto_clustering_with_merged_tf_xla_flags(xl, tmp_path, tf_python):
    (tmp_path / "tfprog.py").write_text(TF_AUTO)
    # Auto-clustering asked for the way TF documents it; on the CPU it also needs --tf_xla_cpu_global_jit
    # (the tf-auto-jit preset has both). Both layers merge into one TF_XLA_FLAGS, flag by flag.
    result = xl(
        "run",
        "tfprog.py",
        "--preset",
        "tf-clustering",
        "--dump",
        "--python",
        tf_python,
        "--env",
        "TF_XLA_FLAGS=--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "result 56.0" in result.stdout
    bundle = tmp_path / "artifacts" / "latest"
    data = manifest(bundle)
    assert data["frontend"]["tf_xla_flags"] == [
        "--tf_xla_clustering_debug",
        "--tf_xla_auto_jit=2",
        "--tf_xla_cpu_global_jit",
    ]
    graphs = {p.name for p in (bundle / "tf_graphs").iterdir()}
    assert "mark_for_compilation.pbtxt" in graphs and "mark_for_compilation_annotated.pbtxt" in graphs
    modules = _inspect(xl, bundle)["modules"]
    clusters = [m for m in modules if m["origin"] == "tensorflow auto-clustering"]
    assert clusters and clusters[0]["short_name"].startswith("cluster_") and clusters[0]["instructions_before"]


@pytest.mark.tensorflow
@pytest.mark.parametrize(
    "args, variable, flag",
    [
        (["--env", "TF_XLA_FLAGS=--tf_xla_bogus_flag"], "TF_XLA_FLAGS", "--tf_xla_bogus_flag"),
        (["--xla-flag=--xla_bogus_flag"], "XLA", "--xla_bogus_flag"),
    ],
)
def test_tf_unknown_flags_refused_before_launch(xl, tmp_path, tf_python, args, variable, flag):
    (tmp_path / "tfprog.py").write_text(TF_JIT)
    result = xl("run", "tfprog.py", "--python", tf_python, "--frontend", "tensorflow", *args, timeout=600)
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"does not know {variable} flag {flag}" in result.stderr and "tensorflow 2." in result.stderr
    assert "Traceback" not in result.stderr
    assert not bundles(tmp_path / "artifacts")
    again = xl("run", "tfprog.py", "--python", tf_python, *args, "--dry-run", "--json")  # the verdict is cached
    assert again.returncode == 2 and "checking" not in again.stderr, again.stderr


@pytest.mark.tensorflow
def test_jax_only_interpreter_refuses_tensorflow_frontend(xl, tmp_path, jax_python):
    (tmp_path / "tfprog.py").write_text(TF_JIT)
    result = xl("run", "tfprog.py", "--frontend", "tensorflow", "--python", jax_python)
    assert result.returncode == 3, result.stderr
    assert "has no tensorflow" in result.stderr and "Traceback" not in result.stderr
    bad = xl("run", "tfprog.py", "--frontend", "tensorflw")
    assert bad.returncode == 2 and "did you mean 'tensorflow'" in bad.stderr, bad.stderr


@pytest.mark.torch_xla
def test_torch_xla_preset_files_and_dumps(xl, tmp_path, torch_xla_python):
    (tmp_path / "ptprog.py").write_text(TORCH)
    result = xl(
        "run",
        "ptprog.py",
        "--preset",
        "torch-xla",
        "--dump",
        "--platform",
        "cpu",
        "--python",
        torch_xla_python,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "result 48.0" in result.stdout
    bundle = tmp_path / "artifacts" / "latest"
    data = manifest(bundle)
    assert data["frontend"]["name"] == "torch-xla" and data["frontend"]["versions"]["torch"]
    env = {row["name"]: row["value"] for row in data["env_changes"]}
    assert env["PJRT_DEVICE"] == "CPU" and env["XLA_IR_DEBUG"] == "1" and env["XLA_HLO_DEBUG"] == "1"
    # XLA_SAVE_TENSORS_FILE: torch_xla appends the device ordinal to the name.
    saved = list((bundle / "torch_xla").glob("tensors.txt*"))
    assert saved and "## BEGIN_GRAPH" in saved[0].read_text()
    assert {"before_optimizations", "after_optimizations"} <= set(check_dump_grammar(bundle / "xla_dump"))
    assert "ptprog.py" in saved[0].read_text()  # XLA_IR_DEBUG: IR nodes carry Python locations
    assert "Execution Analysis" in (bundle / "stderr.log").read_text()  # PT_XLA_DEBUG_LEVEL=2
    modules = _inspect(xl, bundle)["modules"]
    graph = next(m for m in modules if m["origin"] == "torch_xla")
    assert graph["short_name"].startswith("SyncTensorsGraph") and graph["instructions_before"]
    before = (bundle / "xla_dump" / graph["before_file"]).read_text()
    assert 'source_file="' in before and "ptprog.py" in before  # XLA_HLO_DEBUG: HLO metadata names the source


@pytest.mark.torch_xla
def test_torch_xla_unknown_flag_refused_before_launch(xl, tmp_path, torch_xla_python):
    (tmp_path / "ptprog.py").write_text(TORCH)
    result = xl("run", "ptprog.py", "--xla-flag=--xla_bogus_flag", "--python", torch_xla_python, timeout=600)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "torch_xla 2." in result.stderr and "does not know XLA flag --xla_bogus_flag" in result.stderr
    assert not bundles(tmp_path / "artifacts")


@pytest.mark.tensorflow
def test_profile_run_frontend(xl, tmp_path, tf_python):
    (tmp_path / "tfprog.py").write_text(TF_JIT)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "tf.yaml").write_text(
        f"description: TensorFlow target\nrun:\n  frontend: tensorflow\n  python: {tf_python}\n  presets: [tf-clustering]\n"
    )
    (tmp_path / "configs" / "wrong.yaml").write_text(
        f"description: jax asked of a TF venv\nrun:\n  frontend: jax\n  python: {tf_python}\n"
    )
    result = xl("run", "tfprog.py", "--profile", "tf", "--dump", "--dry-run", "--json", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout)
    assert answer["plan"]["frontend"] == "tensorflow" and answer["target"]["frontend"] == "tensorflow"
    assert answer["plan"]["tf_xla_flags"] == ["--tf_xla_clustering_debug"]
    assert {"CUDA_VISIBLE_DEVICES", "JAX_PLATFORMS"}.isdisjoint(c["name"] for c in answer["plan"]["env_changes"])
    wrong = xl("run", "tfprog.py", "--profile", "wrong", "--dry-run", timeout=600)
    assert wrong.returncode == 3 and "has no jax and jaxlib" in wrong.stderr, wrong.stderr
