"""`xlatools triage` for real, on CPU: jaxlib 0.6.2 computes a float64 Student-t density wrong that 0.6.1 gets right
(jax-ml/jax#29537: exp of a constant-folded NaN).

Cost with the release environments cached (jax 0.6.0, 0.6.1, 0.6.2; CI keeps them in XLATOOLS_TEST_BISECT_CACHE):
about 60-100 s on 2 cores for the whole triage (3 release steps, 2 dumping runs, the diff and one replay, 7 pass
bisection steps, a reduction with --jobs 2, an isolation), a few seconds for the resumed run and the dry runs, and
about 20 s for the triage whose stages cannot run. Made afresh, each environment is one uv install (about 2 s with
uv's cache warm; about 100 MB of jaxlib wheel each the first time)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOOD, BAD = "0.6.0", "0.6.2"


def test_triage_goes_from_a_failing_program_to_an_issue_with_every_finding(bx, tmp_path):
    shutil.copy(HERE / "check_student_t.py", tmp_path / "check.py")
    shutil.copy(HERE.parent / "reduce" / "student_t.py", tmp_path / "student_t.py")
    command = ["triage", "--good", GOOD, "--bad", BAD, "--jobs", "2", "--json", "--", "check.py"]
    done = bx(*command)
    assert done.returncode == 0, done.stderr[-4000:]
    state = json.loads(done.stdout)
    stages = {s["stage"]: s for s in state["stages"]}
    assert [s["status"] for s in state["stages"]] == ["done"] * 7, stages
    assert (state["releases"]["last_good"], state["releases"]["first_bad"]) == ("0.6.1", "0.6.2")
    assert (state["dumps"]["last_good"]["exit_code"], state["dumps"]["first_bad"]["exit_code"]) == (0, 1)
    assert state["diff"]["module_name"] == "jit_summary" and "elements differ" in state["diff"]["mismatch"]
    assert state["passes"]["culprits"] == ["constant_folding"]
    reduced = state["reduce"]
    assert reduced["instructions_before"] >= 70 and reduced["instructions_after"] <= 12 and not reduced["flaky"]
    isolated = state["isolate"]
    first = isolated["first_mismatch"] or isolated["first_mismatch_in_context"]
    assert first["opcode"] == "exponential"
    assert "[triage] 7/7 report" in done.stderr  # progress on stderr

    folder = Path(state["folder"])
    issue = (folder / "ISSUE.md").read_text()
    for part in (
        "jaxlib 0.6.2",
        "jaxlib 0.6.1 is right",
        "`constant_folding`",
        "### Minimal HLO",
        "exponential",
        "report.html",
        "isolate.json",
        "xlatools triage --good 0.6.0 --bad 0.6.2",
    ):
        assert part in issue, part
    links = re.findall(r"\]\(([^)]+)\)", issue)
    assert len(links) >= 10 and all((folder / link).exists() for link in links), links

    again = bx(*command)  # the same command: every stage kept, the report written again
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stderr.count("done before") == 6 and "[bisect] step" not in again.stderr
    plan = json.loads(bx(*command[:-2], "--skip", "reduce", "--dry-run", "--", "check.py").stdout)
    assert [s["action"] for s in plan["stages"]] == ["keep"] * 4 + ["skip", "keep", "run"]


def test_stages_that_cannot_run_say_why_and_the_rest_still_report(bx, tmp_path):
    (tmp_path / "fine.py").write_text("print('no jax here, nothing wrong')\n")
    done = bx("triage", "--good", "0.6.1", "--bad", BAD, "--json", "--", "fine.py")
    assert done.returncode == 2, done.stderr[-3000:]  # the first stage not done: the bad end is not bad (bad input)
    state = json.loads(done.stdout)
    stages = {s["stage"]: s for s in state["stages"]}
    assert stages["releases"]["status"] == "cannot-run" and "is not bad" in stages["releases"]["reason"]
    assert stages["dumps"]["status"] == "done"  # the ends as given
    assert stages["diff"]["status"] == "cannot-run" and "no module" in stages["diff"]["reason"]
    assert stages["passes"]["status"] == "cannot-run"
    assert stages["reduce"]["status"] == stages["isolate"]["status"] == "blocked"
    assert "diff: cannot-run" in stages["reduce"]["reason"] and stages["report"]["status"] == "done"
    issue = (Path(state["folder"]) / "ISSUE.md").read_text()
    assert "| reduce | blocked |" in issue and "run the same command again" in issue


def test_a_damaged_triage_state_is_bad_input_naming_it(bx, tmp_path):
    (tmp_path / "check.py").write_text("raise SystemExit(1)\n")
    command = ["triage", "--good", "0.6.1", "--bad", BAD, "--dry-run", "--json", "--", "check.py"]
    planned = bx(*command)
    assert planned.returncode == 0, planned.stderr
    folder = Path(json.loads(planned.stdout)["folder"])
    assert not folder.exists()  # a dry run writes nothing
    folder.mkdir(parents=True)
    (folder / "triage.json").write_text('{"schema": "xlatools.triage/1", "spec": [], "stages": {}}')
    damaged = bx(*command)
    assert damaged.returncode == 2 and str(folder / "triage.json") in damaged.stderr
    assert "[spec]" in damaged.stderr and "--fresh" in damaged.stderr
