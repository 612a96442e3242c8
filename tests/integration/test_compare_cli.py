"""`xlatools diff` / `xlatools report` on real bundles from real jax runs (CPU)."""

from __future__ import annotations

import json

from tests.helpers import run_cli


def diff_json(a, b, *extra, env=None):
    done = run_cli("diff", str(a), str(b), "--json", *extra, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def jit_f(data):
    return next(m for m in data["modules"] if m["a"]["name"] == "jit_f")


def test_first_diverging_pass_is_the_disabled_pass(compare_runs):
    data = diff_json(compare_runs["base"], compare_runs["nofusion"])
    assert [(c["key"], c["kind"], c["b"]) for c in data["run"]["flags"]] == [
        ("xla_disable_hlo_passes", "added", "fusion")
    ]
    module = jit_f(data)
    assert module["match"] == "name+fingerprint" and module["same_input"] and not module["same_output"]
    divergence = module["passes"]["divergence"]
    assert divergence["pass_a"] == "fusion", divergence["label"]  # A ran fusion; in B it was disabled
    rows = module["passes"]["rows"]
    assert all(r["same_hlo"] for r in rows[: divergence["row"]])
    assert ".after_fusion." in divergence["files"]["a_after"]
    assert any(line.startswith(("+", "-")) for line in divergence["diffs"][-1]["lines"])
    others = [m for m in data["modules"] if m["a"]["name"] != "jit_f"]
    assert others and all(m["same_output"] and m["passes"]["divergence"] is None for m in others)


def test_text_output_and_module_detail(compare_runs):
    done = run_cli("diff", str(compare_runs["base"]), str(compare_runs["nofusion"]), "--module", "jit_f")
    assert done.returncode == 0, done.stderr
    assert "flag xla_disable_hlo_passes: added in B (fusion)" in done.stdout
    assert "first diverging pass: jit_f: HLO_passes_after_layout_assignment/fusion (A)" in done.stdout
    assert "<- first divergence" in done.stdout
    assert "xlatools report" in done.stderr  # the link to the report


def test_matching_survives_renumbering_across_jaxlib_versions(compare_runs, compare_old_run):
    data = diff_json(compare_runs["base"], compare_old_run)
    assert {c["key"]: c["b"] for c in data["run"]["fields"]}["jaxlib"] == "0.4.30"
    module = jit_f(data)
    assert module["match"] == "name+fingerprint" and module["same_input"]
    assert module["a"]["id"] != module["b"]["id"]  # 0.10.2 numbers 0000, 0002, ...; 0.4.30 0000, 0001, ...
    assert module["passes"]["rows"] and module["passes"]["divergence"] is not None
    # dump folders work as well as bundles, with no run level
    folders = diff_json(compare_runs["base"] / "xla_dump", compare_old_run / "xla_dump", "--module", "jit_f")
    assert folders["run"]["compared"] is False and [m["a"]["name"] for m in folders["modules"]] == ["jit_f"]


def test_html_and_job_summary(compare_runs, tmp_path):
    summary = tmp_path / "summary.md"
    html = tmp_path / "out" / "diff.html"
    html.parent.mkdir()
    done = run_cli(
        "diff",
        str(compare_runs["base"]),
        str(compare_runs["nofusion"]),
        "--html",
        str(html),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.returncode == 0, done.stderr
    text = summary.read_text()
    assert text.startswith("### xlatools diff") and "first diverging pass: `jit_f`" in text and str(html) in text
    page = html.read_text()
    assert 'id="first-divergence"' in page and "fusion-wrapper" in page


def test_report_one_bundle_and_bad_input(compare_runs, tmp_path):
    done = run_cli("report", str(compare_runs["base"]), "-o", str(tmp_path / "one.html"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "one.html").read_text()
    assert (
        'class="module-table' in page
        and "<svg" in page
        and "stdout.log" in page
        and 'id="first-divergence"' not in page
    )
    three = run_cli(
        "report",
        str(compare_runs["base"]),
        str(compare_runs["base"]),
        str(compare_runs["base"]),
        "-o",
        str(tmp_path / "x.html"),
    )
    assert three.returncode == 2 and "one or two bundles" in three.stderr
    unknown = run_cli("diff", str(compare_runs["base"]), str(compare_runs["nofusion"]), "--module", "jit_ff")
    assert unknown.returncode == 2 and "did you mean 'jit_f'?" in unknown.stderr
    missing = run_cli("diff", str(tmp_path / "nope"), str(compare_runs["base"]))
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_run_appends_to_the_job_summary(compare_runs, tmp_path):
    summary = tmp_path / "summary.md"
    work = compare_runs["work"]
    done = run_cli(
        "run",
        "prog.py",
        "--out",
        str(tmp_path / "runs"),
        cwd=work,
        env={**compare_runs["env"], "GITHUB_STEP_SUMMARY": str(summary)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert summary.read_text().startswith("### xlatools run") and "ok (exit 0" in summary.read_text()
