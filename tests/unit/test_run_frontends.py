"""Frontend planning without processes: TF_XLA_FLAGS layering, platform and cache variables, choice of frontend."""

from pathlib import Path

import pytest

from xlatools.errors import ProfileError, UsageError
from xlatools.run.frontend_checks import preset_frontends
from xlatools.run.frontends import check_frontend, platform_env
from xlatools.run.plan import Program, ProfileRun, RunRequest, plan_run
from xlatools.run.presets.catalog import Catalog
from xlatools.run.target import ProbedInterpreter


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load()


def plan(catalog, frontend, caller=None, profile=None, **kwargs):
    request = RunRequest(program=Program("script", "/x/prog.py"), python="/py", **kwargs)
    return plan_run(request, profile or ProfileRun(), catalog, caller or {}, Path("/work"), frontend=frontend)


def test_tf_xla_flags_merge_by_layer(catalog):
    p = plan(
        catalog,
        "tensorflow",
        caller={"TF_XLA_FLAGS": "--tf_xla_auto_jit=1"},
        presets=["tf-clustering", "tf-auto-jit"],
        env=["TF_XLA_FLAGS=--tf_xla_auto_jit=-1"],
    )
    assert p.tf_xla_flags == ["--tf_xla_clustering_debug", "--tf_xla_cpu_global_jit", "--tf_xla_auto_jit=-1"]
    assert p.tf_xla_flag_sources["--tf_xla_auto_jit=-1"] == "--env"
    assert p.tf_xla_flag_sources["--tf_xla_clustering_debug"] == "preset tf-clustering"
    env = p.bind(Path("/b")).child_env({"TF_XLA_FLAGS": "--tf_xla_auto_jit=1"})
    assert env["TF_XLA_FLAGS"] == "--tf_xla_clustering_debug --tf_xla_cpu_global_jit --tf_xla_auto_jit=-1"
    assert env["TF_DUMP_GRAPH_PREFIX"] == "/b/tf_graphs"


def test_tf_xla_flags_must_be_flags(catalog):
    with pytest.raises(UsageError, match="not an XLA flag"):
        plan(catalog, "tensorflow", env=["TF_XLA_FLAGS=--tf_xla_auto_jit=2 oops"])
    with pytest.raises(UsageError, match="TF_XLA_FLAGS in the environment names a flag file"):
        plan(catalog, "tensorflow", caller={"TF_XLA_FLAGS": "/some/file"})


@pytest.mark.parametrize(
    "frontend, platform, expected",
    [
        ("jax", "cpu", {"JAX_PLATFORMS": "cpu"}),
        ("jax", "gpu", {"JAX_PLATFORMS": "rocm,cpu"}),
        ("torch-xla", "cpu", {"PJRT_DEVICE": "CPU"}),
        ("torch-xla", "gpu", {"PJRT_DEVICE": "CUDA"}),
        ("tensorflow", "cpu", {"CUDA_VISIBLE_DEVICES": "-1"}),
        ("tensorflow", "gpu", {}),
        ("torch-xla", "auto", {}),
    ],
)
def test_platform_env(frontend, platform, expected):
    assert platform_env(frontend, platform, "rocm") == expected


def test_torch_xla_dumping_run_drops_its_persistent_cache(catalog):
    p = plan(catalog, "torch-xla", caller={"XLA_PERSISTENT_CACHE_PATH": "/c"}, dump=True, platform="cpu")
    env = p.child_env({"XLA_PERSISTENT_CACHE_PATH": "/c"})
    assert "XLA_PERSISTENT_CACHE_PATH" not in env and env["PJRT_DEVICE"] == "CPU" and "JAX_PLATFORMS" not in env
    assert p.frontend == "torch-xla"


def test_frontend_names_are_checked():
    assert check_frontend("torch-xla", "--frontend") == "torch-xla" and check_frontend(None, "x") is None
    with pytest.raises(UsageError, match="unknown frontend 'torch_xla'") as caught:
        check_frontend("torch_xla", "--frontend")
    assert "did you mean 'torch-xla'" in caught.value.hint


def test_frontend_presets_and_their_key(catalog):
    assert catalog.get("tf-clustering").frontend == "tensorflow"
    assert catalog.get("torch-xla").frontend == "torch-xla"
    assert catalog.get("hlo").frontend is None
    with pytest.raises(ProfileError):
        Catalog.load({"mine": {"kind": "frontend", "frontend": "mxnet", "env": {"A": "1"}}})


def test_described():
    tf = ProbedInterpreter(
        python="/py", frontend="tensorflow", frontend_version="2.21.0", versions={"tensorflow": "2.21.0"}
    )
    both = ProbedInterpreter(
        python="/py", jax="0.10.2", jaxlib="0.10.2", frontend_version="0.10.2", versions={"tensorflow": "2.21.0"}
    )
    assert tf.described == "tensorflow 2.21.0" and both.described == "jaxlib 0.10.2"


def test_a_frontend_preset_asks_for_its_frontend():
    catalog = Catalog.load()
    assert preset_frontends(catalog, ["vlog1", "tf-clustering", "tf-auto-jit"]) == [
        ("tf-clustering", "tensorflow"),
        ("tf-auto-jit", "tensorflow"),
    ]
    assert preset_frontends(catalog, ["hlo", "ir"]) == []
    with pytest.raises(UsageError, match=r"different frontends: tf-clustering \(tensorflow\), torch-xla"):
        preset_frontends(catalog, ["tf-clustering", "torch-xla"])
