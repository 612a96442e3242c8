"""Metric tests through the real CLI on real release environments (cached like the release bisection's): a
noise-aware bisection that refuses equal ends, a timeline with the program's own packages (--with) and a
release where they do not resolve, and triage --metric from the bisection to ISSUE.md.

The programs here report an exact metric that depends on the jax release (no jax import: each run is
about half a second), so these tests are about the plumbing; the real regressions are in
test_bisect_perf_cases.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

# 100 on jax <= 0.4.29, 130 from 0.4.30 on; the jax version from the package metadata, not an import.
STEP = """import importlib.metadata as md, json, os
release = tuple(int(x) for x in md.version("jax").split(".")[:3])
value = 130 if release >= (0, 4, 30) else 100
json.dump({"size": value}, open(os.environ["XLATOOLS_METRICS_FILE"], "w"))
"""
FLAT = """import json, os
json.dump({"size": 100}, open(os.environ["XLATOOLS_METRICS_FILE"], "w"))
"""
WITH_CHEX = """import importlib.metadata as md, json, os
release = tuple(int(x) for x in md.version("jax").split(".")[:3])
print("chex", md.version("chex"))
json.dump({"size": 130 if release >= (0, 4, 31) else 100}, open(os.environ["XLATOOLS_METRICS_FILE"], "w"))
"""


def test_equal_ends_are_refused_before_any_search(bx, tmp_path):
    (tmp_path / "flat.py").write_text(FLAT)
    refused = bx("bisect", "releases", "--good", "0.4.28", "--bad", "0.4.31", "--metric", "size", "--", "flat.py")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "the two ends do not differ beyond noise" in refused.stderr and "Traceback" not in refused.stderr
    assert "good end 100 ± 0.0% (3 runs), bad end 100 ± 0.0% (3 runs)" in refused.stderr  # both, with their spread
    assert "[bisect] step 3" not in refused.stderr  # refused before any search step


def test_a_timeline_with_the_programs_own_packages(bx, tmp_path):
    (tmp_path / "prog.py").write_text(WITH_CHEX)
    args = ("bisect", "timeline", "--from", "0.4.30", "--to", "0.4.31", "--metric", "size", "--with", "chex")
    done = bx(*args, "--jobs", "2", "--json", "--", "prog.py")  # both releases side by side, environments too
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    timeline = data["timeline"]
    assert [r["runs"]["values"] for r in timeline["rows"]] == [[100.0] * 3, [130.0] * 3]
    assert timeline["exact"] and timeline["steps"] == [
        {"before": "0.4.30", "after": "0.4.31", "direction": "up", "worse": True, "ratio": 1.3}
    ]
    assert ET.parse(timeline["svg"]).getroot().tag.endswith("svg") and Path(timeline["html"]).is_file()
    assert data["spec"]["requirements"] == ["chex"]
    first = Path(data["steps"][0]["bundle"])
    assert "chex " in (first / "stdout.log").read_text()  # resolved in the release's own environment
    assert "-with-" in json.loads((first / "manifest.json").read_text())["interpreter"]["python"]

    again = bx(*args, "--", "prog.py")  # finished: the table again, nothing measured
    assert again.returncode == 0 and "step up (worse): jax 0.4.30 -> jax 0.4.31: 1.3x" in again.stdout
    assert "(round 1)" not in again.stderr and "6 runs recorded" in again.stderr

    unresolvable = bx("bisect", "timeline", "--from", "0.4.30", "--to", "0.4.31", "--metric", "size",
                      "--with", "flax>=0.11", "--json", "--", "prog.py")  # fmt: skip
    assert unresolvable.returncode == 0, unresolvable.stderr[-3000:]
    rows = json.loads(unresolvable.stdout)["timeline"]["rows"]
    assert all(r["runs"] is None and "install failed with flax>=0.11" in r["skipped"] for r in rows)
    assert all("jax" in r["skipped"] for r in rows)  # uv's own reason: flax needs a newer jax


def test_triage_of_a_metric_writes_an_issue_with_the_numbers_and_the_timeline(bx, tmp_path):
    (tmp_path / "step.py").write_text(STEP)
    done = bx("triage", "--good", "0.4.28", "--bad", "0.4.31", "--metric", "size", "--json", "--", "step.py")
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads(done.stdout)
    assert [(s["stage"], s["status"]) for s in state["stages"]] == [
        ("releases", "done"), ("timeline", "done"), ("flags", "done"), ("growth", "done"), ("report", "done"),
    ]  # fmt: skip
    assert state["releases"]["first_bad"] == "0.4.30" and state["releases"]["last_good"] == "0.4.29"
    assert (
        state["metric"]["exact"]
        and state["metric"]["ratio"] == 1.3
        and state["metric"]["good"]["values"] == [100.0] * 3
    )
    bisection = json.loads((Path(state["releases"]["folder"]) / "bisect.json").read_text())
    assert all(s["metric"]["values"] for s in bisection["steps"])  # every step keeps its values
    assert "±" in bisection["steps"][2]["reason"] and "(1 run)" in bisection["steps"][2]["reason"]
    assert [r["key"] for r in state["timeline"]["rows"]] == ["0.4.28", "0.4.29", "0.4.30", "0.4.31"]
    assert "no switch of the table applies to jaxlib 0.4.30" in state["stages"][2]["reason"]
    issue = Path(state["issue"]).read_text()
    assert issue.startswith("# jax 0.4.30: size of step.py is 1.3x jax 0.4.29's")
    assert "![size per release](timeline.svg)" in issue and "| jax 0.4.30 | 130 |" in issue
    assert "jax-0.4.30/bin/python step.py" in issue
    plan = bx("triage", "--good", "0.4.28", "--bad", "0.4.31", "--metric", "size", "--dry-run", "--", "step.py")
    assert plan.returncode == 0 and "1. releases: keep (done before" in plan.stdout and "5. report: run" in plan.stdout


def test_bisect_flags_with_an_exit_status_test(bx, tmp_path):
    """Any test bisect takes: here the exit status of a program that is right only with one switch (this
    interpreter's jaxlib 0.10.2: the switches for it are checked against its flag list, the others listed)."""
    import jaxlib

    from tests.helpers import require

    require("jax", jaxlib.__version__ == "0.10.2", f"jaxlib 0.10.2 in the test interpreter (here {jaxlib.__version__})")
    (tmp_path / "needs.py").write_text(
        "import os, sys\nsys.exit(0 if 'ynn_fusion_type=-reduce' in os.environ.get('XLA_FLAGS', '') else 1)\n"
    )
    done = bx("bisect", "flags", "--json", "--", "needs.py")
    assert done.returncode == 0, done.stderr[-3000:]
    flags = json.loads(done.stdout)["flags"]
    assert flags["recovers"] == ["cpu-ynn-reduce"] and flags["jaxlib"] == "0.10.2"
    rows = {r["name"]: r for r in flags["rows"]}
    assert rows["cpu-xnnpack"]["outcome"] == "bad" and rows["cpu-thunk-runtime"]["tried"] is False
    assert (
        "outside >=0.4.32,<0.7" in rows["cpu-thunk-runtime"]["why"] and "gpu switch" in rows["gpu-triton-gemm"]["why"]
    )
    (tmp_path / "always.py").write_text("raise SystemExit(1)\n")
    none = bx("bisect", "flags", "--switch", "cpu-xnnpack", "--", "always.py")
    assert none.returncode == 1 and "no switch of the table recovers it" in none.stdout, none.stderr[-2000:]
    (tmp_path / "fine.py").write_text("pass\n")
    fine = bx("bisect", "flags", "--switch", "cpu-xnnpack", "--", "fine.py")
    assert fine.returncode == 2 and "nothing for a switch to recover" in fine.stderr
