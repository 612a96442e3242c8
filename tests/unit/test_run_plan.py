"""plan_run: environment composition, XLA_FLAGS merging, dumps into the bundle (pure, no processes)."""

from pathlib import Path

import pytest

from xlatools.errors import UsageError
from xlatools.run.presets.catalog import Catalog
from xlatools.run.plan import ProfileRun, RunRequest, plan_run, settle_request
from xlatools.run.program import Program, parse_program


@pytest.fixture(scope="module")
def catalog():
    return Catalog.load()


def plan(catalog, caller=None, profile=None, jaxlib="0.10.2", **kwargs):
    profile = profile or ProfileRun()
    request = RunRequest(program=kwargs.pop("program", Program("script", "/x/prog.py")), python="/py", **kwargs)
    return plan_run(settle_request(request, profile), profile, catalog, caller or {}, Path("/work"), jaxlib=jaxlib)


def env_of(p, caller=None):
    return p.child_env(caller or {})


def test_dump_points_into_bundle_and_disables_cache(catalog):
    p = plan(catalog, caller={"JAX_COMPILATION_CACHE_DIR": "/cache"}, dump=True)
    env = env_of(p.bind(Path("/b")), {"JAX_COMPILATION_CACHE_DIR": "/cache"})
    assert env["XLA_FLAGS"].split() == ["--xla_dump_hlo_as_text", "--xla_dump_to=/b/xla_dump"]
    assert env["JAX_ENABLE_COMPILATION_CACHE"] == "false"
    assert "JAX_COMPILATION_CACHE_DIR" not in env
    assert any("compilation cache disabled" in n for n in p.notes)
    assert p.bind(Path("/b")).dump_dir == "/b/xla_dump"


def test_caller_dump_to_is_replaced_and_reported(catalog):
    p = plan(catalog, caller={"XLA_FLAGS": "--xla_dump_to=/elsewhere --xla_cpu_use_thunk_runtime=false"}, dump=True)
    flags = p.bind(Path("/b")).xla_flags
    assert "--xla_dump_to=/b/xla_dump" in flags and "--xla_cpu_use_thunk_runtime=false" in flags
    assert p.overridden_flags[0].flag == "--xla_dump_to=/elsewhere"
    assert any("/elsewhere" in note for note in p.notes)


def test_precedence_cli_over_profile_over_presets_over_caller(catalog):
    profile = ProfileRun(
        name="prof",
        env={"JAX_TRACEBACK_FILTERING": "tracebackhide", "TF_CPP_MIN_LOG_LEVEL": "3"},
        xla_flags=["--xla_dump_hlo_pass_re=prof"],
        presets=["tracebacks"],
    )
    caller = {"JAX_TRACEBACK_FILTERING": "auto", "XLA_FLAGS": "--xla_dump_hlo_pass_re=caller"}
    p = plan(
        catalog,
        caller=caller,
        profile=profile,
        presets=["dump:passes"],
        env=["TF_CPP_MIN_LOG_LEVEL=2"],
        xla_flags=["--xla_dump_hlo_pass_re=cli"],
    )
    env = env_of(p, caller)
    assert env["JAX_TRACEBACK_FILTERING"] == "tracebackhide"  # profile beats preset beats caller
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "2"  # explicit CLI beats profile
    assert "--xla_dump_hlo_pass_re=cli" in p.xla_flags
    assert [str(o.source) for o in p.overridden_flags] == ["preset passes", "profile prof", "--xla-flag"]
    change = next(c for c in p.env_changes if c.name == "JAX_TRACEBACK_FILTERING")
    assert (change.previous, str(change.source)) == ("auto", "profile prof")


def test_vlog_and_vmodule_unhide_info(catalog):
    p = plan(catalog, vlog=1, vmodule=["hlo_pass_pipeline=1,cpu_*=2"], caller={"TF_CPP_VMODULE": "foo=3"})
    env = env_of(p, {"TF_CPP_VMODULE": "foo=3"})
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert env["TF_CPP_MAX_VLOG_LEVEL"] == "1"
    assert env["TF_CPP_VMODULE"] == "foo=3,hlo_pass_pipeline=1,cpu_*=2"
    p = plan(catalog, presets=["log:passes"])
    assert env_of(p)["TF_CPP_VMODULE"] == "hlo_pass_pipeline=1"
    assert env_of(p)["TF_CPP_MIN_LOG_LEVEL"] == "0"


def test_explicit_min_log_level_is_kept_with_a_note(catalog):
    p = plan(catalog, vlog=2, env=["TF_CPP_MIN_LOG_LEVEL=1"])
    assert env_of(p)["TF_CPP_MIN_LOG_LEVEL"] == "1"
    assert any("will not show" in n for n in p.notes)


def test_bundle_placeholders_in_presets(catalog):
    p = plan(catalog, presets=["ir", "tf-clustering", "torch-xla"]).bind(Path("/b"))
    env = env_of(p)
    assert env["JAX_DUMP_IR_TO"] == "/b/jax_ir"
    assert env["TF_DUMP_GRAPH_PREFIX"] == "/b/tf_graphs"
    assert env["XLA_SAVE_TENSORS_FILE"] == "/b/torch_xla/tensors.txt"
    assert p.dump_dir is None  # no XLA dump flags, no xla_dump_to


def test_platform(catalog):
    assert env_of(plan(catalog, platform="cpu"))["JAX_PLATFORMS"] == "cpu"
    assert "JAX_PLATFORMS" not in env_of(plan(catalog, platform="auto"))
    gpu = plan_run(
        RunRequest(Program("script", "/x.py"), "/py", platform="gpu"),
        ProfileRun(),
        Catalog.load(),
        {},
        Path("/"),
        jaxlib="0.10.2",
        gpu_platform="cuda",
    )
    assert env_of(gpu)["JAX_PLATFORMS"] == "cuda,cpu"


def test_smoke_collectives_gets_cpu_devices_only_off_gpu(catalog):
    smoke = Program("smoke", "dot,collectives")
    assert "--xla_force_host_platform_device_count=4" in plan(catalog, program=smoke).xla_flags
    assert not any("device_count" in f for f in plan(catalog, program=smoke, platform="gpu").xla_flags)


def test_version_gate():
    from xlatools.run.presets.catalog import parse_preset

    preset, problems = parse_preset(
        "new", {"kind": "dump", "xla_flags": ["--xla_dump_hlo_as_text"], "min_jaxlib": "0.10.2"}, "t"
    )
    assert not problems
    catalog = Catalog({("dump", "new"): preset})
    with pytest.raises(UsageError, match="needs jaxlib >= 0.10.2; the target has jaxlib 0.4.30"):
        plan(catalog, presets=["new"], jaxlib="0.4.30")
    assert plan(catalog, presets=["new"], jaxlib="0.10.2").presets[0].name == "new"


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"env": ["NOEQUALS"]}, "expected KEY=VALUE"),
        ({"vmodule": ["mod=high"]}, "whole number"),
        ({"xla_flags": ["xla_dump_to=/x"]}, "not an XLA flag"),
        ({"xla_flags": ["--vmodule=a=1"]}, "not an XLA_FLAGS flag"),
        ({"presets": ["nope"]}, "unknown preset"),
        ({"timeout": 0}, "more than 0"),
        ({"vlog": -1}, "0 or more"),
    ],
)
def test_bad_input(catalog, kwargs, message):
    with pytest.raises(UsageError, match=message):
        plan(catalog, **kwargs)


def test_parse_program(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("print(1)\n")
    assert parse_program(None, None, [], tmp_path).label.startswith("smoke:dot,matmul")
    assert parse_program("smoke:dot", None, ["a"], tmp_path) == Program("smoke", "dot", ("a",))
    assert parse_program("prog.py", None, ["--x"], tmp_path) == Program("script", str(script), ("--x",))
    assert parse_program("arg1", "pkg.mod", ["arg2"], tmp_path) == Program("module", "pkg.mod", ("arg1", "arg2"))
    for bad, message in (
        ("missing.py", "program not found"),
        ("smoke:dott", "did you mean 'smoke:dot'"),
        ("smoke:", "needs a name"),
    ):
        with pytest.raises(UsageError) as info:
            parse_program(bad, None, [], tmp_path)
        assert message in info.value.message + (info.value.hint or "")


def test_bind_replaces_every_placeholder(catalog):
    unbound = plan(catalog, dump=True, presets=["ir"], program=Program("smoke", "dot"))
    bound = repr(unbound.bind(Path("/b")).to_json())
    # expected: every placeholder the plan had is now the bundle's path
    assert "{bundle}" in repr(unbound.to_json()) and "{bundle}" not in bound and "/b/" in bound
