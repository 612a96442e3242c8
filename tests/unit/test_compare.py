"""compare/: alignment, module matching, divergence, bounded reading, run-level diff, report rendering.

Dumps here are synthetic folders named like real ones; tests/integration/test_compare_cli.py
diffs real bundles from real jax runs."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pytest

from xlatools.compare.diff import diff_bundles
from xlatools.compare.model import StepInfo
from xlatools.compare.modules import match_modules, module_refs
from xlatools.compare.passes import align
from xlatools.compare.report import write_report
from xlatools.compare.rundiff import diff_runs
from xlatools.compare.sides import Side
from xlatools.compare.synthetic import make_pair
from xlatools.compare.text import markdown_summary, render_text
from xlatools.compare.textdiff import text_diff
from xlatools.console import append_job_summary
from xlatools.records.base import validate
from xlatools.records.run import RunManifest
from xlatools.run import dump_stats
from xlatools.run.dump_stats import hlo_file_stats, memory_totals
from xlatools.run.dumps import count_instructions, index_dump

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hlo"


def hlo(name: str, op: str, extra: str = "") -> str:
    return (
        f"HloModule {name}, entry_computation_layout={{(f32[2]{{0}})->f32[2]{{0}}}}\n\n"
        f"ENTRY %main.1 (x.1: f32[2]) -> f32[2] {{\n  %x.1 = f32[2]{{0}} parameter(0)\n{extra}"
        f"  ROOT %r.2 = f32[2]{{0}} {op}(%x.1, %x.1)\n}}\n"
    )


def write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def step(n: int, pipeline: str, name: str) -> StepInfo:
    return StepInfo(n, pipeline, name, f"f{n}", 1, True)


def test_align_same_renamed_one_sided_and_moved():
    a = [
        step(0, "p", "start"),
        step(1, "p", "fusion"),
        step(2, "p", "dce"),
        step(3, "q", "cse"),
        step(4, "q", "algsimp"),
    ]
    b = [
        step(0, "p", "start"),
        step(1, "p", "fusion-wrapper"),
        step(2, "q", "algsimp"),
        step(3, "q", "cse"),
        step(4, "q", "new"),
    ]
    rows = align(a, b)
    kinds = [(r.kind, r.a.pass_name if r.a else None, r.b.pass_name if r.b else None) for r in rows]
    assert kinds == [
        ("same", "start", "start"),
        ("renamed", "fusion", "fusion-wrapper"),
        ("only_a", "dce", None),
        ("moved", None, "algsimp"),
        ("same", "cse", "cse"),
        ("moved", "algsimp", None),
        ("only_b", None, "new"),
    ]


def test_align_marks_reordered_passes_as_moved():
    a = [step(0, "p", "x"), step(1, "p", "y"), step(2, "p", "z")]
    b = [step(0, "p", "z"), step(1, "p", "x"), step(2, "p", "y")]
    rows = align(a, b)
    assert [r.kind for r in rows].count("moved") == 2  # z: once on each side
    assert sum(r.kind == "same" for r in rows) == 2


def test_two_modules_of_one_name_are_not_confused_and_renumbering_is_survived(tmp_path):
    a = write(
        tmp_path / "a",
        {
            "module_0000.jit_f.before_optimizations.txt": hlo("jit_f", "add"),
            "module_0002.jit_f.before_optimizations.txt": hlo("jit_f", "multiply"),
            "module_0004.jit_g.before_optimizations.txt": hlo("jit_g", "subtract"),
            "module_0006.jit_only_a.before_optimizations.txt": hlo("jit_only_a", "divide"),
        },
    )
    # B: the two jit_f compiled in the other order, 0.4.30-style numbering, jit_g renamed, and
    # the names printed differently (x.1 -> Arg_0.1): matching goes by canonical fingerprint.
    b = write(
        tmp_path / "b",
        {
            "module_0000.jit_f.before_optimizations.txt": hlo("jit_f", "multiply").replace("x.1", "Arg_0.1"),
            "module_0001.jit_f.before_optimizations.txt": hlo("jit_f", "add").replace("x.1", "Arg_0.1"),
            "module_0002.jit_g_renamed.before_optimizations.txt": hlo("jit_g_renamed", "subtract"),
            "module_0003.jit_only_b.before_optimizations.txt": hlo("jit_only_b", "maximum"),
        },
    )
    ia, ib = index_dump(a), index_dump(b)
    pairs, only_a, only_b = match_modules(module_refs(ia), module_refs(ib), (ia, ib))
    got = {(ra.id, rb.id): kind for kind, ra, rb in pairs}
    assert got == {(0, 1): "name+fingerprint", (2, 0): "name+fingerprint", (4, 2): "fingerprint"}
    assert [r.name for r in only_a] == ["jit_only_a"] and [r.name for r in only_b] == ["jit_only_b"]


def test_same_name_with_changed_input_is_matched_by_name(tmp_path):
    a = write(tmp_path / "a", {"module_0000.jit_f.before_optimizations.txt": hlo("jit_f", "add")})
    b = write(tmp_path / "b", {"module_0000.jit_f.before_optimizations.txt": hlo("jit_f", "multiply")})
    result = diff_bundles(a, b)
    assert [(m.match, m.same_input) for m in result.modules] == [("name", False)]
    assert result.modules[0].passes.note.startswith("no per-pass dumps")


@pytest.fixture(scope="module")
def small_pair(tmp_path_factory):
    return make_pair(tmp_path_factory.mktemp("pair"), modules=6, steps=12, lines=60, changed=3, diverge_at=5)


def test_first_diverging_pass_of_a_synthetic_pair(small_pair):
    result = diff_bundles(small_pair.a, small_pair.b)
    module, divergence = result.first_divergence()
    assert module.a.name == small_pair.changed_module and (module.a.id, module.b.id) == (6, 3)
    assert divergence.pass_a == divergence.pass_b == small_pair.diverge_pass
    assert divergence.files["a_after"].endswith(".0005.pipeline.after_pass-5.before_pass-6.txt")
    rows = module.passes.rows
    assert all(r.same_hlo for r in rows[: divergence.row]) and rows[divergence.row].same_hlo is False
    assert [d.title for d in divergence.diffs][-1] == "A vs B after this pass"
    assert any("multiply" in line for line in divergence.diffs[-1].lines)
    others = [m for m in result.modules if m is not module]
    assert all(m.same_output and m.passes.divergence is None for m in others)
    assert json.loads(json.dumps(result.to_json(), default=str))["modules_differ"] is True
    assert small_pair.diverge_pass in render_text(result)
    assert small_pair.diverge_pass in markdown_summary(result)


def test_memory_stays_bounded_on_a_larger_pair(tmp_path):
    """Structural, not timed: the peak of Python allocations is a small fraction of the dump."""
    pair = make_pair(tmp_path, modules=16, steps=18, lines=450, changed=9, diverge_at=7)
    total = 2 * pair.bytes_per_side
    assert total > 30e6
    tracemalloc.start()
    try:
        result = diff_bundles(pair.a, pair.b)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.first_divergence()[1].pass_a == pair.diverge_pass
    assert peak < total / 10, f"peak traced memory {peak} bytes for a {total}-byte pair"


def test_file_stats_agree_with_line_counting_across_chunk_boundaries(monkeypatch, tmp_path):
    monkeypatch.setattr(dump_stats, "_CHUNK", 7)  # every line straddles a chunk boundary
    for path in sorted(FIXTURES.glob("*.txt")):
        stats = hlo_file_stats(path)
        assert stats.instructions == count_instructions(path) > 0
        assert stats.size == path.stat().st_size
    one = write(
        tmp_path,
        {
            "a.txt": hlo("m", "add"),
            "b.txt": hlo("m", "add").replace("f32[2]{0})->", "f32[2]{0:T(2)})->"),
            "c.txt": hlo("m", "add"),
        },
    )
    a, b, c = (hlo_file_stats(one / n) for n in ("a.txt", "b.txt", "c.txt"))
    assert a.digest == c.digest and a.body_sha256 == b.body_sha256 and a.digest != b.digest


def test_memory_totals(tmp_path):
    root = write(
        tmp_path,
        {
            "module_0000.jit_f.before_optimizations.txt": hlo("jit_f", "add"),
            "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt": "BufferAssignment:\nallocation 0: size 256, parameter 0, shape |f32[8,8]| at ShapeIndex {}:\n"
            " value: <16 x.1 @0> (size=256,offset=0): f32[8,8]{1,0}\nallocation 1: size 32, output shape is |f32[8]|, maybe-live-out:\n"
            "allocation 2: size 4, thread-local:\nallocation 3: size 256, preallocated-temp:\n",
            "module_0000.jit_f.cpu_after_optimizations-memory-usage-report.txt": "Memory Space: default (color=0)\nTotal bytes: 812 (812B)\n",
        },
    )
    index = index_dump(root)
    totals = memory_totals(index, index.modules[0])
    assert (totals.allocations, totals.allocated_bytes, totals.report_total_bytes) == (4, 548, 812)
    assert totals.by_kind == {"parameter": 256, "output": 32, "thread-local": 4, "temp": 256}


def test_run_level_diff_normalises_bundle_paths(tmp_path):
    def manifest(bundle: str, jaxlib: str, flags: list[str], devices: int) -> RunManifest:
        return validate(
            {
                "kind": "run",
                "status": "ok",
                "exit_code": 0,
                "duration_s": 1.0,
                "program": {"kind": "script", "name": "prog.py", "label": "prog.py"},
                "jax": {
                    "jax": jaxlib,
                    "jaxlib": jaxlib,
                    "backend": "cpu",
                    "devices": [{"platform": "cpu", "kind": "cpu"}] * devices,
                },
                "xla_flags": flags + [f"--xla_dump_to={bundle}/xla_dump"],
                "env_changes": [{"name": "XLA_FLAGS", "value": " ".join(flags + [f"--xla_dump_to={bundle}/xla_dump"])}],
                "profile": {
                    "name": "p",
                    "timeout": 1,
                    "resolved": {"run": {"timeout": 1}},
                    "provenance": [{"key": "run.timeout", "value": 1, "origin": "x.yaml:3"}],
                },
            },
            RunManifest,
            Path(bundle) / "manifest.json",
            "run manifest",
        )

    a = Side(
        "A",
        tmp_path / "a",
        tmp_path / "a",
        manifest(str(tmp_path / "a"), "0.10.2", ["--xla_dump_hlo_as_text"], 1),
        None,
    )
    b = Side(
        "B",
        tmp_path / "b",
        tmp_path / "b",
        manifest(str(tmp_path / "b"), "0.4.30", ["--xla_dump_hlo_as_text", "--xla_disable_hlo_passes=fusion"], 4),
        None,
    )
    run = diff_runs(a, b)
    assert {c.key: (c.a, c.b) for c in run.fields} == {
        "jax": ("0.10.2", "0.4.30"),
        "jaxlib": ("0.10.2", "0.4.30"),
        "devices": ("1x cpu:cpu", "4x cpu:cpu"),
    }
    assert [(c.key, c.kind, c.b) for c in run.flags] == [("xla_disable_hlo_passes", "added", "fusion")]
    assert [c.key for c in run.env] == ["XLA_FLAGS"] and "<bundle>" in run.env[0].a
    assert run.profile == []


def test_text_diff_is_bounded_unless_full():
    a = "\n".join(f"line {i}" for i in range(1000))
    b = "\n".join(f"line {i}" if i % 2 else f"changed {i}" for i in range(1000))
    short = text_diff("t", a, b, "A", "B", limit=50)
    assert len(short.lines) == 50 and short.truncated
    full = text_diff("t", a, b, "A", "B", full=True)
    assert not full.truncated and len(full.lines) > 1000
    assert text_diff("t", a, a, "A", "B").identical


def test_job_summary_is_appended_only_in_github_actions(monkeypatch, tmp_path):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_job_summary("# x") is False
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert append_job_summary("one") and append_job_summary("two\n")
    assert summary.read_text() == "one\ntwo\n"


def test_report_is_self_contained_with_bounded_logs(small_pair, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "xla_dump").symlink_to(small_pair.a)
    (bundle / "manifest.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "kind": "run",
                "status": "failed",
                "exit_code": 1,
                "program": {"kind": "script", "name": "prog.py", "label": "prog.py"},
            }
        )
    )
    (bundle / "stderr.log").write_text("".join(f"log line {i} <script>\n" for i in range(120_000)))  # ~2.3 MB
    out = write_report([bundle, small_pair.b], tmp_path / "r.html")
    html = out.read_text()
    assert html.count("<script>") == 2  # the page's own two; the log's text is escaped
    assert "log line 119999 &lt;script&gt;" in html and "log line 0 &lt;" not in html  # the end of a big log, bounded
    assert len(html) < 3_000_000
    assert 'class="module-table' in html and "<svg" in html and 'id="first-divergence"' in html
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html), "the report must not load anything"


def test_bundles_without_dumps_are_compared_at_run_level(tmp_path):
    for name, status in (("a", "ok"), ("b", "failed")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(
            json.dumps({"schema_version": 1, "kind": "replay", "status": status, "exit_code": int(status != "ok")})
        )
    result = diff_bundles(tmp_path / "a", tmp_path / "b")
    assert {c.key for c in result.run.fields} == {"status", "exit code"}
    assert result.modules == [] and len(result.notes) == 2 and result.a.kind == "replay"
    assert "status: ok -> failed" in render_text(result)


def test_a_diff_without_dumps_says_which_preset_gives_the_answer(tmp_path):
    """Issue 19 (7): bisect's last-good vs first-bad of runs without dumps said modules_differ: false and nothing."""
    from xlatools.compare.diff import bisect_diff

    sides = []
    for name in ("good", "bad"):
        bundle = tmp_path / name
        bundle.mkdir()
        (bundle / "manifest.json").write_text(
            json.dumps({"schema_version": 1, "kind": "run", "status": "ok", "exit_code": 0})
        )
        sides.append(bundle)
    summary = bisect_diff(sides[0], sides[1], tmp_path / "diff")
    assert "--preset hlo" in summary["note"] and "dump:passes" in summary["note"]
    assert summary["note"] in json.loads((tmp_path / "diff" / "diff.json").read_text())["notes"]
