""" "Fixed yet?" must be true (issue 41): a real upstream miscompile, asked of its bad and its good jaxlib.

jaxlib 0.6.2 computes tests/integration/reduce/student_t.py's float64 Student-t densities wrong on CPU (finite values
where every one must be NaN; jax-ml/jax#29537), 0.6.1 right. The pair of answers is each test: the bad jaxlib
reproduces, the good one does not; neither side alone. Cost with the release environment cached: about 45-60 s on 2
cores (two dumping runs, one replay, three packs' replays, three `repro run` replays, a two-step bisection)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import bundles, manifest, run_cli

STUDENT_T = Path(__file__).resolve().parents[1] / "reduce" / "student_t.py"


def _dumping_run(call, cwd: Path, python: str, out: str) -> Path:
    """student_t.py run by `python` with HLO text and snapshots (the arguments and the result each module computed)."""
    shutil.copy(STUDENT_T, cwd / "student_t.py")
    done = call(
        "run", "student_t.py", "--python", python, "--preset", "dump:hlo", "--preset", "dump:snapshots", "--out", out
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return bundles(cwd / out)[0]


@pytest.fixture(scope="module")
def bad_run(tmp_path_factory, replay_env, miscompile_python) -> Path:
    """The bad jaxlib's run, with the snapshot its wrong module recorded (shared by the pairs below)."""
    work = tmp_path_factory.mktemp("fixed-yet")
    return _dumping_run(
        lambda *args: run_cli(*args, cwd=work, env=replay_env, timeout=300), work, miscompile_python, "runs"
    )


def _json(done) -> dict:
    assert done.stdout, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_a_pack_made_against_the_good_jaxlib_is_fixed_on_the_good_one_only(
    replay, bad_run, miscompile_python, fixed_python
):
    bad, good, run = miscompile_python, fixed_python, bad_run
    # The replay that finds it: the bad jaxlib matches the snapshot its own run computed, and differs from 0.6.1.
    found = replay("replay", str(run), "--python", bad, "--reference-python", good, "--out", "out", "--json")
    assert found.returncode == 1, found.stderr[-3000:]
    (module,) = _json(found)["modules"]
    assert (module["outcome"], module["failed_run"]) == ("mismatch", "reference-jax-0.6.1")
    # Packed from the replay bundle itself (issue 37 item 5): its interpreter, reference and module travel.
    packed = replay("repro", "pack", "out/latest-replay", "-o", "fixed-yet.tar.gz", "--out", "out", "--json")
    assert packed.returncode == 0, packed.stderr[-3000:]
    assert "is a replay bundle: the pack carries its replay" in packed.stderr
    expected = _json(packed)["expected"]
    assert list(expected.values()) == ["mismatch against reference-jax-0.6.1"], expected
    assert _json(packed)["not_as_replayed"] == []

    answers = {}
    for side, python in (("bad", bad), ("good", good)):
        done = replay(
            "repro", "run", "fixed-yet.tar.gz", "--python", python, "--reference-python", good, "--out", side, "--json"
        )
        answers[side] = (done.returncode, _json(done))
    assert answers["bad"][0] == 1 and answers["bad"][1]["outcome"] == "reproduced", answers["bad"]
    assert answers["good"][0] == 0 and answers["good"][1]["outcome"] == "not-reproduced", answers["good"]
    said = "\n".join(answers["good"][1]["differences"])
    assert "jit_summary: ok, expected mismatch against reference-jax-0.6.1" in said, said
    # On the good jaxlib the snapshot the bad run computed differs: listed, never the judge.
    (fixed,) = manifest(Path(answers["good"][1]["bundle"]))["modules"]
    assert fixed["outcome"] == "ok" and any(
        n.startswith("listed, not judged: against the snapshot") for n in fixed["notes"]
    )
    assert any(not c["ok"] and c["against"] == "snapshot" for c in fixed["comparisons"])
    # A reference of another jaxlib is not the reference the outcome was judged against.
    other = replay(
        "repro", "run", "fixed-yet.tar.gz", "--python", good, "--reference-python", bad, "--out", "other", "--json"
    )
    assert other.returncode == 3 and "judged against jaxlib 0.6.1" in _json(other)["reason"], other.stdout


def test_bisect_replay_judges_each_release_by_a_good_runs_recorded_results(
    bx, tmp_path, miscompile_python, fixed_python
):
    """bisect --replay's steps (ReplayTest): a good run's snapshots, replayed by the bad jaxlib, make a pack whose
    expected outcome is the mismatch against them; 0.6.1 (good) does not reproduce it, 0.6.2 (bad) does."""
    from xlatools.replay.pack import extract, write_pack

    run = _dumping_run(bx, tmp_path, fixed_python, "runs")
    packed = bx("repro", "pack", str(run), "--python", miscompile_python, "-o", "golden.tar.gz", "--json")
    assert packed.returncode == 0, packed.stderr[-3000:]
    assert list(_json(packed)["expected"].values()) == ["mismatch against snapshot"]
    done = bx("bisect", "releases", "--good", "0.6.1", "--bad", "0.6.2", "--replay", "golden.tar.gz", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    state = _json(done)
    assert (state["result"]["last_good"]["key"], state["result"]["first_bad"]["key"]) == ("0.6.1", "0.6.2")
    reasons = {s["key"]: (s["outcome"], s["reason"]) for s in state["steps"]}
    assert reasons["0.6.1"][0] == "good" and reasons["0.6.1"][1].startswith("not-reproduced"), reasons
    assert reasons["0.6.2"][0] == "bad" and reasons["0.6.2"][1].startswith("reproduced"), reasons
    # A pack judged against a reference interpreter cannot judge a step alone: refused, saying how to make one.
    root = extract(tmp_path / "golden.tar.gz", tmp_path / "unpacked")
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    files.pop("SHA256SUMS")
    index = json.loads(files["pack.json"])
    index["reference_pythons"] = [{"python": fixed_python, "jaxlib": "0.6.1"}]
    files["pack.json"] = json.dumps(index).encode()
    write_pack(files, tmp_path / "referenced.tar.gz")
    refused = bx("bisect", "releases", "--good", "0.6.1", "--bad", "0.6.2", "--replay", "referenced.tar.gz")
    assert refused.returncode == 2 and "dump:snapshots" in refused.stderr, refused.stderr[-2000:]


def test_reduce_judges_by_the_reference_never_by_the_bad_runs_snapshot(
    replay, tmp_path, bad_run, miscompile_python, fixed_python
):
    """reduce's mismatch oracle (and replay --isolate, which judges each instruction with it): the bad jaxlib's module
    is interesting against jaxlib 0.10.2 (this interpreter); the good jaxlib's is not, though it differs from the
    snapshot the bad run recorded (a recorded-result oracle would have called it interesting)."""
    import sys

    common = ["--reference-python", sys.executable, "--rechecks", "1", "--max-time", "1", "--json"]
    bad = replay("reduce", str(bad_run), "--python", miscompile_python, *common, "--out", "bad")
    assert bad.returncode == 0, bad.stderr[-3000:]
    assert _json(bad)["oracle"] == "mismatch" and "NaN on one side only" in _json(bad)["verdict"]
    good = replay("reduce", str(bad_run), "--python", fixed_python, *common, "--out", "good")
    assert good.returncode == 2 and "the input is not interesting" in good.stderr, good.stderr[-3000:]
    assert "outputs match" in good.stderr and not bundles(tmp_path / "good")
