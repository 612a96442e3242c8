"""One test per defect the corpus found (issue 19), each on a real library program from tests/corpus.

A replay on the jaxlib that dumped a module must agree with the module's own snapshot; when xlatools
cannot do its part the answer is "cannot run" (exit 3) or a refusal with the fix, never a verdict."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.integration.corpus.conftest import corpus_python


def _replay(xl, source, jaxlib: str, *extra: str, out: str = "replays"):
    done = xl("replay", str(source), "--python", corpus_python(jaxlib), "--json", "--out", out, *extra)
    return done, (json.loads(done.stdout) if done.stdout.strip().startswith("{") else {})


def _dump(bundle: str) -> Path:
    return Path(bundle) / "xla_dump"


def _agree_with_snapshots(data: dict) -> None:
    assert data["modules"], data
    for module in data["modules"]:
        assert module["outcome"] == "ok", (module["name"], module["runs"][0].get("message"), module["comparisons"])
        if module["files"].get("snapshot"):
            assert [c["against"] for c in module["comparisons"]] == ["snapshot"]


def test_defect1_a_snapshot_alone_pairs_with_its_unoptimised_module_or_says_the_fix(corpus_run, xl, tmp_path):
    """control_flow's modules have fusions: their snapshots hold the optimised module."""
    dump = _dump(corpus_run("control_flow", "0.10.2"))
    snapshot = next(dump.glob("module_*.jit_loops.snapshot.*.pb"))
    done, data = _replay(xl, snapshot, "0.10.2")
    assert done.returncode == 0, done.stderr[-2000:]
    _agree_with_snapshots(data)
    assert data["modules"][0]["runs"][0]["loaded_from"]["kind"] != "snapshot"  # the unoptimised sibling compiled
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(snapshot, lone)
    done, _ = _replay(xl, lone / snapshot.name, "0.10.2", out="refused")
    assert done.returncode == 2 and "after optimisation" in done.stderr and "before_optimizations.txt" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "refused").exists()


@pytest.mark.parametrize("jaxlib", ["0.4.30", "0.10.2", "0.12"])
def test_defect2_lapack_modules_replay_on_every_jaxlib(corpus_run, xl, jaxlib):
    done, data = _replay(xl, corpus_run("linalg", jaxlib), jaxlib)
    assert done.returncode == 0, done.stderr[-2000:]
    _agree_with_snapshots(data)


@pytest.mark.parametrize("jaxlib", ["0.4.30", "0.10.2"])
def test_defect2_host_callbacks_are_refused_by_design(corpus_run, xl, jaxlib):
    done, data = _replay(xl, corpus_run("host_callback", jaxlib), jaxlib)
    assert done.returncode == 3, done.stderr[-2000:]
    refused = [m for m in data["modules"] if m["outcome"] == "cannot-run"]
    assert [m["name"] for m in refused] == ["jit_f"]
    assert "refused by design" in refused[0]["runs"][0]["message"] and "callback" in refused[0]["runs"][0]["message"]


def test_defect3_x64_modules_keep_their_types_and_packs_carry_the_setting(corpus_run, xl, tmp_path):
    """x64 runs with JAX_ENABLE_X64=1; the pack is made and run in shells without it."""
    bundle = corpus_run("x64", "0.10.2")
    python = corpus_python("0.10.2")
    pack = xl(
        "repro",
        "pack",
        bundle,
        "-o",
        "x64.tar.gz",
        "--python",
        python,
        "--json",
        "--out",
        "packs",
        env={"JAX_ENABLE_X64": ""},
    )
    assert pack.returncode == 0, pack.stderr[-2000:]
    assert set(json.loads(pack.stdout)["expected"].values()) == {"ok"}
    with tarfile.open(tmp_path / "x64.tar.gz") as tar:
        meta = json.loads(tar.extractfile("repro/pack.json").read())
    assert meta["replay"]["env"] == {"JAX_ENABLE_X64": "1"}
    assert any(m["name"] == "jit_precise" for m in meta["modules"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = xl(
        "repro",
        "run",
        str(tmp_path / "x64.tar.gz"),
        "--python",
        python,
        "--match",
        "outputs",
        "--json",
        "--out",
        str(elsewhere),
        env={"JAX_ENABLE_X64": ""},
    )
    answer = json.loads(done.stdout)  # a healthy program's pack: nothing to reproduce, replayed the same everywhere
    assert done.returncode == 5 and answer["outcome"] == "nothing-to-reproduce", done.stdout + done.stderr[-2000:]
    assert answer["differences"] == [] and "replayed here: the same outcome" in answer["reason"]


def test_defect4_a_while_loop_module_agrees_with_its_own_snapshot(corpus_run, xl):
    """diffrax's solve and its gradient: the text dump elides the solver's tableau (`constant({...})`), and XLA
    parses that back as other numbers. The replay compiles the proto (or module.mlir) instead."""
    bundle = corpus_run("diffrax_ode", "0.10.2")
    done, data = _replay(xl, bundle, "0.10.2")
    assert done.returncode == 0, done.stderr[-2000:]
    _agree_with_snapshots(data)
    losses = [m for m in data["modules"] if m["name"] == "jit_loss"]
    assert len(losses) == 2 and all(m["runs"][0]["loaded_from"]["kind"] != "text" for m in losses)
    text = next(_dump(bundle).glob(f"module_{losses[0]['id']:04d}.jit_loss.before_optimizations.txt"))
    done, _ = _replay(xl, text, "0.10.2")
    assert done.returncode == 2 and "elides large constants" in done.stderr and ".hlo.pb" in done.stderr


def test_defect5_diff_claims_no_divergence_where_the_optimised_hlo_is_the_same(corpus_run, xl):
    new, old = corpus_run("scipy_funcs", "0.10.2"), corpus_run("scipy_funcs", "0.4.30")
    done = xl("diff", new, old, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    for module in data["modules"]:
        if module["same_output"]:
            assert module["passes"]["divergence"] is None, module["a"]["name"]
    differing = [m["a"]["name"] for m in data["modules"] if not m["same_output"]]
    assert differing and data["headline"]["module"] == "jit_f"  # the program's own function, not jax's helpers
    page = Path(new).parent / "report.html"
    done = xl("report", new, old, "--module", "jit_f", "-o", str(page))
    assert done.returncode == 0 and "jit_f" in page.read_text()


def test_defect5_two_runs_with_host_callbacks_do_not_differ(corpus_run, xl):
    """jaxlib 0.4.30 passes host callbacks as process pointers (equinox's error checks in diffrax)."""
    first = corpus_run("diffrax_ode", "0.4.30", "dump:passes")
    second = corpus_run("diffrax_ode", "0.4.30", "dump:passes", tag="b")
    data = json.loads(xl("diff", first, second, "--json").stdout)
    assert data["modules_differ"] is False and data["headline"] is None


def test_defect6_packs_leave_out_what_xlatools_cannot_replay_and_record_references(corpus_run, xl, tmp_path):
    bundle = corpus_run("host_callback", "0.10.2")
    done = xl(
        "repro",
        "pack",
        bundle,
        "--all",
        "-o",
        "cb.tar.gz",
        "--python",
        corpus_python("0.10.2"),
        "--reference-python",
        corpus_python("0.12"),
        "--json",
        "--out",
        "packs",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert all(label[:4].isdigit() for label in data["expected"])  # keyed by id and name
    assert "cannot-run" not in data["expected"].values() and any("jit_f" in k for k in data["left_out"])
    with tarfile.open(tmp_path / "cb.tar.gz") as tar:
        meta = json.loads(tar.extractfile("repro/pack.json").read())
    assert meta["reference_pythons"][0]["jaxlib"].startswith("0.12") and meta["left_out"]
    unnamed = xl("repro", "run", str(tmp_path / "cb.tar.gz"), "--python", corpus_python("0.10.2"), "--out", "again")
    assert unnamed.returncode == 3 and "--reference-python gave 0" in unnamed.stderr, unnamed.stderr[-2000:]
    run = xl(
        "repro",
        "run",
        str(tmp_path / "cb.tar.gz"),
        "--python",
        corpus_python("0.10.2"),
        "--reference-python",
        corpus_python("0.12"),
        "--out",
        "again",
    )
    assert run.returncode == 5 and "nothing-to-reproduce" in run.stderr, run.stderr[-2000:]  # its modules ran ok
    alone = xl("repro", "pack", bundle, "-o", "none.tar.gz", "--python", corpus_python("0.10.2"), "--out", "packs")
    assert alone.returncode == 3 and "nothing to pack" in alone.stderr and not (tmp_path / "none.tar.gz").exists()
