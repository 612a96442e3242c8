"""The pure parts of the slowdown tools: a timeline's rows and steps, its picture, the switch table, the program's
own requirements for release environments, and a metric triage's ISSUE.md."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from xlatools.bisect.envs import release_env
from xlatools.bisect.extras import program_requirements
from xlatools.bisect.switches import by_name, load
from xlatools.bisect.timeline_view import analyse, table_lines
from xlatools.compare.timeline import write_timeline
from xlatools.errors import UsageError
from xlatools.records.bisect import Candidate, StepRecord
from xlatools.records.bisect_metric import MetricAnswer, MetricRuns
from xlatools.vocab import StepOutcome

VALUES = {  # jax-ml/jax#36799's shape: a step up at 0.4.33, a fix later; 0.4.34 did not install
    "0.4.31": [0.18, 0.19, 0.18],
    "0.4.33": [1.44, 1.5, 1.45],
    "0.4.34": None,
    "0.4.35": [1.45, 1.43, 1.46],
    "0.5.0": [0.2, 0.21, 0.2],
}


def timeline_steps() -> tuple[list[Candidate], list[StepRecord]]:
    candidates = [Candidate(key=v, label=f"jax {v}") for v in VALUES]
    steps, n = [], 0
    for c in candidates:
        values = VALUES[c.key]
        for attempt, value in enumerate(values or [None]):
            n += 1
            runs = MetricRuns(name="run_s", values=[value], bundles=[f"b{n}"]) if value is not None else None
            outcome = StepOutcome.GOOD if value is not None else StepOutcome.SKIP
            reason = "measured" if value is not None else "install failed: no wheel"
            steps.append(
                StepRecord(
                    n=n, key=c.key, label=c.label, role="measure", attempt=attempt, outcome=outcome, reason=reason,
                    metric=runs,
                )
            )  # fmt: skip
    return candidates, steps


def test_a_timeline_names_every_step_up_and_down_and_skips_what_was_not_measured():
    result = analyse(*timeline_steps(), "run_s", False, 3)
    rows = {r.key: r for r in result.rows}
    assert rows["0.4.33"].change == "up" and rows["0.4.33"].ratio == pytest.approx(8.06, rel=0.01)
    assert rows["0.4.35"].change is None and rows["0.4.35"].ratio == pytest.approx(1.0, abs=0.01)  # vs 0.4.33
    assert rows["0.5.0"].change == "down"
    assert rows["0.4.34"].runs is None and "install failed" in rows["0.4.34"].skipped
    assert [(s.before, s.after, s.worse) for s in result.steps] == [
        ("0.4.31", "0.4.33", True),
        ("0.4.35", "0.5.0", False),
    ]
    text = "\n".join(table_lines(result))
    assert "step up (worse): jax 0.4.31 -> jax 0.4.33: 8.06x (a regression)" in text
    assert "step down (better): jax 0.4.35 -> jax 0.5.0" in text and "skip: install failed" in text
    assert not result.exact


def test_the_picture_is_a_standalone_svg_and_a_page_with_the_table(tmp_path):
    result = analyse(*timeline_steps(), "run_s", False, 3)
    svg, html = write_timeline(result, tmp_path, "run_s: jax 0.4.31 .. jax 0.5.0")
    root = ET.parse(svg).getroot()  # well-formed XML, drawable on its own
    assert root.tag.endswith("svg") and root.get("data-check") == "timeline"
    circles = [e for e in root.iter() if e.tag.endswith("circle")]
    assert len(circles) == 4 and {c.get("class") for c in circles} == {"pt", "pt worse", "pt better"}
    page = html.read_text()
    assert "<svg" in page and "jax 0.4.33" in page and "8.056x" in page and "skip: install failed" in page


def test_the_switch_table_applies_by_backend_and_jaxlib_version():
    switches = load()
    names = {s.name for s in switches}
    assert {"cpu-thunk-runtime", "cpu-ynn-reduce", "gpu-triton-gemm", "gpu-command-buffers"} <= names
    by = {s.name: s for s in switches}
    assert by["cpu-thunk-runtime"].applies("cpu", "0.4.33") and not by["cpu-thunk-runtime"].applies("cpu", "0.10.2")
    assert by["cpu-ynn-reduce"].applies("cpu", "0.10.2") and not by["cpu-ynn-reduce"].applies("cpu", "0.4.33")
    assert not by["gpu-triton-gemm"].applies("cpu", "0.10.2") and by["gpu-triton-gemm"].applies("gpu", "0.11.2")
    assert by["cpu-thunk-runtime"].applies("cpu", "0.5.0.dev20250101")  # a nightly counts as its release
    assert all(s.flag.startswith("--xla_") and "=" in s.flag for s in switches)
    assert [s.name for s in by_name(switches, ["cpu-ynn-reduce"])] == ["cpu-ynn-reduce"]
    with pytest.raises(UsageError, match="did you mean cpu-ynn-reduce"):
        by_name(switches, ["cpu-ynn-reduc"])


def test_the_programs_requirements_are_checked_and_name_their_own_environments(tmp_path):
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("# the model's packages\nflax>=0.8  # the model\n\noptax==0.2.5\n")
    assert program_requirements(["chex", "flax>=0.8"], [reqs]) == ("chex", "flax>=0.8", "optax==0.2.5")
    for bad, message in (
        (["jax==0.4.30"], "pins its own jax"),
        (["jaxlib"], "pins its own jaxlib"),
        (["flax ==="], "not a requirement"),
        (["pkg @ https://example.invalid/p.whl"], "a URL requirement"),
    ):
        with pytest.raises(UsageError, match=message):
            program_requirements(bad, [])
    (tmp_path / "opts.txt").write_text("--index-url https://example.invalid/simple\nflax\n")
    with pytest.raises(UsageError, match="opts.txt:1: --index-url: option lines are not read here"):
        program_requirements([], [tmp_path / "opts.txt"])
    with pytest.raises(UsageError, match="cannot read the requirements file"):
        program_requirements([], [tmp_path / "missing.txt"])
    plain, with_flax = release_env("0.4.30", "3.11"), release_env("0.4.30", "3.11", extras=("flax>=0.8",))
    assert plain.name == "jax-0.4.30-py3.11-cpu" and with_flax.name.startswith("jax-0.4.30-py3.11-cpu-with-")
    assert with_flax.requirements[-1] == "flax>=0.8" and with_flax.requirements[:2] == plain.requirements[:2]
    assert (
        release_env("0.4.30", "3.11", extras=("a", "b")).name == release_env("0.4.30", "3.11", extras=("b", "a")).name
    )


def test_a_metric_triage_issue_has_the_numbers_the_workaround_and_the_commands(tmp_path):
    from xlatools.records.bisect import ProgramTestSpec, RuleSpec
    from xlatools.records.triage import ReleasesFound, TriageSpec
    from xlatools.records.triage_perf import FlagsFound, GrowthFound, ModuleGrowth, PerfTriageState
    from xlatools.triage.perf_report import render

    spec = TriageSpec(
        good="0.4.31", bad="0.4.33", python_version="3.11", platform="cpu", atol=1e-3, rtol=1e-3,
        test=ProgramTestSpec(program="/home/me/scan.py", rule=RuleSpec(metric="run_s")),
    )  # fmt: skip
    state = PerfTriageState(spec=spec, folder=tmp_path)
    state.releases = ReleasesFound(last_good="0.4.31", first_bad="0.4.33", folder=str(tmp_path / "bisect"), steps=2)
    good = MetricRuns(name="run_s", values=[0.18e-3] * 5, centre=0.18e-3, spread=0.02)
    bad = MetricRuns(name="run_s", values=[1.44e-3] * 5, centre=1.44e-3, spread=0.01)
    state.metric = MetricAnswer(name="run_s", good=good, bad=bad, gap_se=40.2, ratio=8.0)
    state.flags = FlagsFound(
        folder="f", python="p", recovers=["cpu-thunk-runtime"], flags=["--xla_cpu_use_thunk_runtime=false"],
        reasons=["run_s 0.00018 ± 2.0% (1 run): good"], tried=1, table=["  cpu-thunk-runtime RECOVERS"],
    )  # fmt: skip
    state.growth = GrowthFound(good_bundle="g", bad_bundle="b")
    state.growth.modules = [ModuleGrowth(name="jit_filter_step", metric="run_s", good=0.18e-3, bad=1.44e-3, ratio=8.0)]
    text = render(state, ["triage", "--good", "0.4.31", "--bad", "0.4.33", "--metric", "run_s", "--", "scan.py"])
    assert text.startswith("# jax 0.4.33: run_s of scan.py is 8x jax 0.4.31's")
    assert "**First bad release: jax 0.4.33**" in text and "40.2 standard errors apart" in text
    assert "0.00018 ± 2.0% (5 runs) -> jax 0.4.33 0.00144 ± 1.0% (5 runs)" in text
    assert "`XLA_FLAGS=--xla_cpu_use_thunk_runtime=false` recovers it on jax 0.4.33" in text
    assert "`jit_filter_step`: run_s 0.00018 -> 0.00144 (8x)" in text
    assert "XLA_FLAGS=--xla_cpu_use_thunk_runtime=false jax-0.4.33/bin/python scan.py" in text
    assert "xlatools triage --good 0.4.31 --bad 0.4.33 --metric run_s -- scan.py" in text
    assert "/home/me" not in text  # the program by name: the folder is the reader's
