"""Pure parts of the bisect sources: release candidates and environments, the good/bad rule,
pass lists from a per-pass dump, commit ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlatools.bisect.commits import parse_range
from xlatools.bisect.envs import release_env, release_requirements
from xlatools.bisect.passes import culprit_hlo, passes_from_dump
from xlatools.bisect.releases import plan_release_candidates
from xlatools.bisect.rule import Rule
from xlatools.errors import UsageError
from xlatools.records import to_json
from xlatools.records.run import RunManifest
from xlatools.run.dumps import index_dump
from xlatools.vocab import Status

JAX = ["0.5.2", "0.5.1", "0.5.0", "0.4.38", "0.4.37", "0.4.36", "0.4.31", "0.4.30", "0.4.14", "0.4.13"]
JAXLIB = ["0.5.1", "0.5.0", "0.4.38", "0.4.36", "0.4.31", "0.4.30", "0.4.13"]


def test_release_candidates_keep_versions_with_a_jaxlib_and_list_the_rest():
    plan = plan_release_candidates("0.4.36", "0.5.1", JAX, JAXLIB, "3.11")
    assert plan.candidates == ["0.4.36", "0.4.38", "0.5.0", "0.5.1"]
    assert plan.excluded == ["0.4.37"]


@pytest.mark.parametrize(
    "good,bad,message",
    [
        ("0.4.30", "0.4.30", "same version"),
        ("0.5.0", "0.4.30", "newer than --bad"),
        ("x", "0.4.30", "not a version"),
        ("0.4.30", "0.4.99", "no such jax release"),
        ("0.4.14", "0.4.30", "no jaxlib 0.4.14 for Python 3.11"),
        ("0.4.30", "0.5.2", "no jaxlib 0.5.2"),
    ],
)
def test_release_ends_are_checked(good, bad, message):
    with pytest.raises(UsageError, match=message):
        plan_release_candidates(good, bad, JAX, JAXLIB, "3.11")


def test_release_requirements_follow_the_era():
    assert release_requirements("0.4.30") == ("jax==0.4.30", "jaxlib==0.4.30", "numpy<2", "flatbuffers", "absl-py")
    assert release_requirements("0.10.2") == ("jax==0.10.2", "jaxlib==0.10.2")
    assert release_requirements("0.6.0", "gpu")[-2:] == ("jax-cuda12-plugin==0.6.0", "jax-cuda12-pjrt==0.6.0")
    with pytest.raises(UsageError, match="CUDA plugin"):
        release_requirements("0.4.30", "gpu")
    assert release_env("0.4.30", "3.11").name == "jax-0.4.30-py3.11-cpu"


def test_rule_judges_exit_match_and_metric(tmp_path):
    (tmp_path / "stdout.log").write_text("result 3.0\n")
    (tmp_path / "stderr.log").write_text("")
    ok, failed = RunManifest(exit_code=0, status=Status.OK), RunManifest(exit_code=1, status=Status.FAILED)
    assert Rule().judge(ok, tmp_path)[0] == "good"
    assert Rule().judge(failed, tmp_path)[0] == "bad"
    assert Rule().judge(RunManifest(exit_code=125), tmp_path)[0] == "skip"
    assert Rule(bad_exit=(2,)).judge(failed, tmp_path)[0] == "skip"
    assert Rule(match=r"result 3\.0").judge(ok, tmp_path)[0] == "bad"
    assert Rule(match=r"result 4").judge(ok, tmp_path)[0] == "good"
    assert Rule(match=r"result 4").judge(failed, tmp_path)[0] == "skip"
    (tmp_path / "metrics.json").write_text(json.dumps({"step_s": 0.7}))
    assert Rule(metric="step_s", threshold=0.5).judge(ok, tmp_path)[0] == "bad"
    assert Rule(metric="step_s", threshold=0.9).judge(ok, tmp_path)[0] == "good"
    assert Rule(metric="step_s", threshold=0.9, higher_is_better=True).judge(ok, tmp_path)[0] == "bad"
    assert Rule(metric="other", threshold=1.0).judge(ok, tmp_path)[0] == "skip"
    # A failure the test did not ask about is a skip with the reason, even where the match is found: a crash,
    # or (for a dump match, which is about a compiled module) an exit status --bad-exit does not name.
    crashed = RunManifest(exit_code=-6, status=Status.FAILED)
    assert Rule(match=r"result 3\.0").judge(crashed, tmp_path)[0] == "skip"
    assert "crashed (exit -6)" in Rule(match=r"result 3\.0").judge(crashed, tmp_path)[1]
    assert Rule(match=r"result 3\.0", bad_exit=(134, -6)).judge(crashed, tmp_path)[0] == "bad"
    dump = tmp_path / "xla_dump"
    dump.mkdir()
    (dump / "module_0001.jit_g.cpu_after_optimizations.txt").write_text(
        "HloModule jit_g\nENTRY e { ROOT a = f32[] sine() }\n"
    )
    (dump / "module_0002.jit_f.cpu_after_optimizations.txt").write_text(
        "HloModule jit_f\nENTRY e { ROOT a = f32[] add() }\n"
    )
    in_dump = Rule(match="sine", match_in="dump:after_optimizations")
    assert in_dump.judge(ok, tmp_path)[0] == "bad"  # jit_g's file
    assert Rule(**{**vars(in_dump), "hlo_module": "jit_f"}).judge(ok, tmp_path)[0] == "good"  # jit_f's files only
    assert Rule(**{**vars(in_dump), "hlo_module": "1"}).judge(ok, tmp_path)[0] == "bad"  # by id
    assert "did not ask about" in in_dump.judge(failed, tmp_path)[1]  # exit 1 (MatMul rank error) is no verdict
    for bad_rule in (
        Rule(match="("),
        Rule(match_in="dump:"),
        Rule(threshold=1.0),
        Rule(metric="x", threshold=1.0, repeat=5),  # --repeat belongs to the noise-aware test
        Rule(metric="x", repeat=2),
        Rule(metric="x", max_runs=0),
        Rule(match="a", metric="x", threshold=1),
    ):
        with pytest.raises(UsageError):
            bad_rule.validate()


def _fake_dump(root: Path) -> Path:
    dump = root / "xla_dump"
    dump.mkdir()
    module = "module_0002.jit_f"
    (dump / f"{module}.before_optimizations.txt").write_text("HloModule jit_f\nENTRY e { ROOT a = f32[] add() }\n")
    steps = [
        ("0000", "simp", "pipeline-start", "algsimp", "a = 1"),
        ("0001", "simp", "algsimp", "dce", "a = 2"),
        ("0002", "fusion-pipe", "fusion", "fusion-wrapper", "a = fusion()"),
        ("0003", "copy-insertion", "adding_copies_to_resolve_interference", None, "a = copy"),
    ]
    for step, pipeline, name, nxt, body in steps:
        tail = f".before_{nxt}" if nxt else ""
        (dump / f"{module}.{step}.{pipeline}.after_{name}{tail}.txt").write_text(f"HloModule jit_f\n{body}\n")
    (dump / f"{module}.cpu_after_optimizations.txt").write_text("HloModule jit_f\n")
    return dump


def test_passes_from_a_per_pass_dump_and_the_culprit_hlo(tmp_path):
    index = index_dump(_fake_dump(tmp_path))
    passes = to_json(passes_from_dump(index))
    assert [p["name"] for p in passes] == ["algsimp", "fusion"]  # markers and inner copy-insertion dumps dropped
    assert passes[1]["pipelines"] == ["fusion-pipe"] and passes[1]["modules"] == ["jit_f"]
    [hlo] = to_json(culprit_hlo(index, ["fusion"], tmp_path))
    assert hlo["before"].endswith("after_algsimp.before_dce.txt") and "after_fusion" in hlo["after"]
    assert "+a = fusion()" in Path(hlo["diff"]).read_text()


def test_commit_ranges():
    assert parse_range("abc..def", "--xla") == ("abc", "def")
    for text in ("abc", "..def", "abc..", "a...b"):
        with pytest.raises(UsageError):
            parse_range(text, "--xla")


def test_a_replay_test_refuses_before_any_step_a_pack_it_cannot_use(tmp_path):
    """--replay PACK: a damaged pack, one made with --reference-python (bisect has no such option), or one that
    records no failure (every step would "reproduce" its ok) is bad input once, not a skipped step per release."""
    from xlatools.bisect.checks import ReplayTest
    from xlatools.replay.pack import extract, write_pack

    seed = Path(__file__).resolve().parent.parent / "fixtures" / "bundles-v1" / "pack-seed.tar.gz"
    with pytest.raises(UsageError, match="the pack records no failure"):
        ReplayTest(seed).validate()  # its jit_fn ran ok: nothing to reproduce
    root = extract(seed, tmp_path / "seed")
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    files.pop("SHA256SUMS")
    index = json.loads(files["pack.json"])
    index["modules"][0]["outcome"] = "mismatch"
    files["pack.json"] = json.dumps(index).encode()
    ReplayTest(write_pack(files, tmp_path / "failing.tar.gz")).validate()  # a whole failing pack without references
    index["reference_pythons"] = [{"python": "/elsewhere/bin/python", "jaxlib": "0.4.31"}]
    files["pack.json"] = json.dumps(index).encode()
    with pytest.raises(UsageError, match=r"reference interpreter\(s\) \(jaxlib 0.4.31\)"):
        ReplayTest(write_pack(files, tmp_path / "refs.tar.gz")).validate()
    (tmp_path / "cut.tar.gz").write_bytes(seed.read_bytes()[:200])
    with pytest.raises(UsageError, match="not a readable pack"):
        ReplayTest(tmp_path / "cut.tar.gz").validate()


def test_without_uv_pip_makes_the_environments_and_says_how_to_get_uv_once(tmp_path, monkeypatch):
    from xlatools.bisect import envs

    made = []
    monkeypatch.setattr(envs, "find_uv", lambda: None)
    monkeypatch.setattr(envs, "_base_python", lambda version: "python3")
    monkeypatch.setattr(envs, "_run", made.append)
    monkeypatch.setattr(envs, "_SAID_NO_UV", [])
    said: list[str] = []
    for version in ("0.4.30", "0.4.31"):
        spec = envs.EnvSpec(f"jax-{version}", "3.11", (f"jax=={version}", f"jaxlib=={version}"))
        assert envs._make(spec, tmp_path / version, said.append) == "pip"
    assert [line for line in said if "uv not found" in line] == [envs.NO_UV]
    assert "pip install uv" in envs.NO_UV and "1-1.5 min apiece" in envs.NO_UV
    assert said[1] == "pip: making jax-0.4.30: jax==0.4.30 jaxlib==0.4.30" and len(made) == 4
