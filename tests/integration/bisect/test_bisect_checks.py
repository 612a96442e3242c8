"""ProgramTest end to end: a real run bundle per check, judged by metric, output match or exit code."""

from __future__ import annotations

import sys
from pathlib import Path

from xlatools.bisect.checks import StepEnv, TestOptions, build_test
from xlatools.bisect.rule import Rule
from xlatools.console import Reporter

PROGRAM = """import json, os, sys
if "XLATOOLS_METRICS_FILE" in os.environ:  # set by xlatools with --metric only
    json.dump({"step_s": 0.7}, open(os.environ["XLATOOLS_METRICS_FILE"], "w"))
print("answer 42")
sys.exit(int(sys.argv[1]))
"""


def test_program_test_judges_a_real_run(tmp_path, monkeypatch, probe_cache):
    monkeypatch.setenv("XLATOOLS_CACHE_DIR", str(probe_cache))
    (tmp_path / "prog.py").write_text(PROGRAM)

    def check(rule: Rule, code: int = 0):
        test = build_test(TestOptions(program="prog.py", args=(str(code),), rule=rule, cwd=tmp_path), Reporter.silent())
        return test.check(StepEnv(sys.executable), tmp_path / "steps", "step")

    verdict = check(Rule(metric="step_s", threshold=0.5))
    assert (verdict.outcome, verdict.reason) == ("bad", "step_s = 0.7 (above 0.5; 1 run, spread not measured)")
    assert (Path(verdict.bundle) / "metrics.json").exists() and (Path(verdict.bundle) / "manifest.json").exists()
    assert check(Rule(metric="step_s", threshold=0.9)).outcome == "good"
    assert check(Rule(match=r"answer \d+")).outcome == "bad"
    assert check(Rule(), code=3).outcome == "bad"
    assert check(Rule(), code=125).outcome == "skip"
    assert check(Rule(bad_exit=(3,)), code=4).outcome == "skip"
