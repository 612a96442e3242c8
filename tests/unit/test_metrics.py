"""Metrics without a program: the observer's event files read into records, metric names, samples and what
each metric sums or takes, the bisect rule on built-in metrics, and the inspect rows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from xlatools.bisect.rule import Rule
from xlatools.errors import UsageError
from xlatools.records.base import validate
from xlatools.records.metrics import CallTimes, ModuleMemory, ModuleMetrics, ProcessMetrics, RunMetrics
from xlatools.records.run import RunManifest
from xlatools.run.metrics import metric_samples, parse_metric
from xlatools.run.metrics_view import module_rows, process_lines
from xlatools.run.observer import HOOK_DIR, observer_env, parse_measure_calls, read_metrics
from xlatools.vocab import Status


def _module(id: int, name: str, wall: list[float] | None = None, temp: int | None = None, **more) -> ModuleMetrics:
    calls = CallTimes(wall_s=wall, cpu_s=[w / 2 for w in wall], timed=len(wall)) if wall is not None else None
    return ModuleMetrics(id=id, name=name, calls=calls, memory=ModuleMemory(temp_bytes=temp), **more)


def _run(*modules: ModuleMetrics, processes: list[ProcessMetrics] | None = None) -> RunManifest:
    record = RunManifest(exit_code=0, status=Status.OK)
    record.metrics = RunMetrics(modules=list(modules), processes=processes or [])
    return record


def test_metric_names_and_module_selections():
    assert parse_metric("run_s") == ("run_s", None)
    assert parse_metric("run_s:jit_step") == ("run_s", "jit_step")
    assert parse_metric("step_time") == ("step_time", None)  # the program's own
    for bad in ("", ":x", "run_s:", "peak_rss_mb:jit_f", "step_time:jit_f"):
        with pytest.raises(UsageError):
            parse_metric(bad)
    assert parse_measure_calls(None) == 20 and parse_measure_calls("all") == -1 and parse_measure_calls("0") == 0
    with pytest.raises(UsageError, match="--measure-calls"):
        parse_measure_calls("-3")


def test_what_each_metric_sums_or_takes(tmp_path):
    record = _run(
        _module(1, "jit_step", [9.0, 1.0, 3.0, 2.0], temp=100, compile_s=0.5, flops=10.0),  # warm-up 9.0 left out
        _module(2, "jit_step", [5.0, 4.0], temp=300, compile_s=0.25),  # the same name, another compile
        _module(3, "jit_once", [0.5], temp=7, compile_s=0.125),  # one call: its warm-up counts
        _module(4, "jit_never", None, temp=None, compile_s=1.0),  # compiled, never executed
        processes=[
            ProcessMetrics(pid=1, process=0, peak_rss_mb=200.0, cpu_s=3.0),
            ProcessMetrics(pid=2, process=1, peak_rss_mb=250.0, cpu_s=4.0),
        ],
    )
    run_s = metric_samples(record, "run_s")
    assert [g.samples for g in run_s.groups] == [[1.0, 3.0, 2.0], [4.0], [0.5]]
    assert [g.excluded for g in run_s.groups] == [[9.0], [5.0], []]
    assert run_s.value == 2.0 + 4.0 + 0.5 and run_s.per_group == "median" and run_s.combine == "sum"
    assert "warm-up" in run_s.how and run_s.samples() == [1.0, 3.0, 2.0, 4.0, 0.5]
    assert metric_samples(record, "run_s:step").value == 6.0  # jit_step, both compiles
    assert metric_samples(record, "run_cpu_s:jit_step").value == 1.0 + 2.0
    assert metric_samples(record, "temp_bytes").value == 300  # the largest: temps live only during their call
    assert metric_samples(record, "compile_s").value == 0.5 + 0.25 + 0.125 + 1.0  # every compile, summed
    assert metric_samples(record, "flops").value == 10.0
    assert metric_samples(record, "peak_rss_mb").value == 250.0
    assert metric_samples(record, "cpu_s").value == 7.0
    missing = metric_samples(record, "run_s:jit_other")
    assert missing.value is None and "no module named jit_other" in missing.missing and "jit_step" in missing.missing
    assert "not executed" in metric_samples(record, "run_s:jit_never").missing
    no_metrics = metric_samples(RunManifest(), "run_s")
    assert no_metrics.value is None and "--no-metrics" in no_metrics.missing
    (tmp_path / "metrics.json").write_text(json.dumps({"step_time": 0.7}))
    own = metric_samples(record, "step_time", bundle=tmp_path)
    assert (own.value, own.source, own.samples()) == (0.7, "program", [0.7])
    assert metric_samples(record, "other", bundle=tmp_path).missing.startswith("no metric other")


def test_the_records_survive_the_manifest_reader():
    record = _run(_module(1, "jit_f", [0.25, 0.125], temp=5), processes=[ProcessMetrics(pid=3, peak_rss_mb=1.5)])
    from xlatools.records import to_json

    again = validate(to_json(record), RunManifest, Path("manifest.json"), what="run manifest")
    assert again.metrics == record.metrics
    old = to_json(RunManifest())
    assert "metrics" not in old and validate(old, RunManifest, Path("m"), what="m").metrics is None


def test_bisect_rule_judges_builtin_metrics(tmp_path):
    record = _run(_module(1, "jit_f", [1.0, 0.002, 0.004], temp=80_000_000))
    (tmp_path / "manifest.json").write_text(json.dumps({}))
    assert Rule(metric="temp_bytes", threshold=50e6).judge(record, tmp_path) == (
        "bad",
        "temp_bytes = 8e+07 (above 5e+07; 1 run, spread not measured)",
    )
    assert Rule(metric="run_s:jit_f", threshold=0.01).judge(record, tmp_path)[0] == "good"
    skipped = Rule(metric="run_s:jit_g", threshold=0.01).judge(record, tmp_path)
    assert skipped[0] == "skip" and "no module named jit_g" in skipped[1]
    with pytest.raises(UsageError):
        Rule(metric="run_s:", threshold=1.0).validate()


def _events(folder: Path, pid: int, *lines: dict, cut: str = "") -> None:
    text = "".join(json.dumps({"t": 1.0, **line}) + "\n" for line in lines)
    (folder / f"{pid}.events.jsonl").write_text(text + cut)


def test_event_files_become_the_manifest_record(tmp_path):
    folder = tmp_path / "observer"
    folder.mkdir()
    start = {"ev": "start", "v": 1, "measure_calls": 2}
    compiled = {"ev": "compile_end", "m": 1, "name": "jit_f", "s": 0.5, "backend_s": 0.4, "cache_hit": False}
    memory = {"memory": {"temp": 64, "argument": 8, "output": 4, "alias": 0, "code": 900}, "flops": 12.0}
    _events(
        folder,
        101,
        {**start, "process": 0},
        {"ev": "jax", "jax": "0.10.2", "jaxlib": "0.10.2"},
        {"ev": "compile_start", "m": 1, "name": "jit_f"},
        {**compiled, **memory, "rss_kb": 1024, "utime": 1.0, "stime": 0.5},
        {"ev": "calls", "m": 1, "first": 0, "wall": [0.3, 0.1], "cpu": [0.2, 0.1]},
        {"ev": "compile_start", "m": 2, "name": "jit_g"},  # a compile that never ended (a stuck process)
        {"ev": "untimed", "counts": {"1": 5}},
        {"ev": "note", "text": "this jax has no pjit._get_fastpath_data"},
        {"ev": "end", "maxrss_kb": 2048, "utime": 2.0, "stime": 1.0},
    )
    _events(
        folder,
        102,
        {**start, "process": 1},
        {**compiled, "memory": {"temp": "many"}, "rss_kb": 4096, "utime": 1.5, "stime": 0.25},
        cut='{"ev": "calls", "m": 1, "wa',  # killed mid-line: no `end`, the last compile's numbers stand
    )
    (folder / "junk.events.jsonl").write_text("not an observer file\n")
    metrics = read_metrics(tmp_path, 2)
    assert metrics.measure_calls == 2 and metrics.synchronised and "first 2 call(s)" in metrics.mode
    first, second = metrics.processes
    assert (first.pid, first.process, first.exited, first.peak_rss_mb, first.cpu_s) == (101, 0, True, 2.0, 3.0)
    assert (second.process, second.exited, second.peak_rss_mb, second.cpu_s) == (1, False, 4.0, 1.75)
    f, g, f1 = metrics.modules
    assert (f.name, f.compile_s, f.backend_compile_s, f.cache_hit, f.flops) == ("jit_f", 0.5, 0.4, False, 12.0)
    assert f.memory == ModuleMemory(
        temp_bytes=64, argument_bytes=8, output_bytes=4, alias_bytes=0, generated_code_bytes=900
    )
    assert f.calls == CallTimes(wall_s=[0.3, 0.1], cpu_s=[0.2, 0.1], timed=2, untimed=5)
    assert (g.name, g.compile_s, g.calls) == ("jit_g", None, None)
    assert (f1.process, f1.memory.temp_bytes, f1.calls) == (1, None, None)
    assert metrics.notes == ["metrics: this jax has no pjit._get_fastpath_data"]
    rows = module_rows(metrics)
    assert rows[0][:3] == ("module", "name", "compile s") and rows[1][1] == "jit_f" and rows[1][3] == "64 B"
    assert rows[1][-3:] == ("2+5", "100.000", "100.000")
    assert any("did not reach Python's exit" in line for line in process_lines(metrics))


def test_no_observer_file_is_said(tmp_path):
    (tmp_path / "observer").mkdir()
    metrics = read_metrics(tmp_path, 20)
    assert metrics.modules == [] and "did not start" in metrics.notes[0]


def test_the_observer_goes_first_on_pythonpath_and_restores_it(tmp_path):
    env = observer_env({"PYTHONPATH": "/mine", "HOME": "/h"}, tmp_path, 5)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(HOOK_DIR), "/mine"]
    assert env["XLATOOLS_OBSERVE_PYTHONPATH"] == "/mine" and env["XLATOOLS_OBSERVE_CALLS"] == "5"
    assert env["XLATOOLS_OBSERVE_DIR"] == str(tmp_path.resolve() / "observer")
    assert "XLATOOLS_OBSERVE_PYTHONPATH" in observer_env({}, tmp_path, 0) and "PYTHONPATH" in observer_env(
        {}, tmp_path, 0
    )


def test_the_observer_is_standalone():
    """Its files run in the program's interpreter: nothing of xlatools, nor jax at import."""
    import ast

    for path in sorted(HOOK_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
        names += [n.module for n in top if isinstance(n, ast.ImportFrom) and n.module]
        assert not [n for n in names if n.split(".")[0] in ("xlatools", "jax", "jaxlib", "numpy")], path


def test_replay_names_the_slower_interpreter():
    from xlatools.records.replay import ModuleRecord, RunRecord, Timings
    from xlatools.records.run import InterpreterFacts
    from xlatools.replay.speed import compare_speed, speed_cell

    def run(label: str, low: float, count: int = 20, jaxlib: str = "0.4.31") -> RunRecord:
        return RunRecord(
            label=label,
            python=f"/{label}/python",
            run_s=Timings(count=count, min=low, median=low * 1.5, first=low * 3),
            versions=InterpreterFacts(jaxlib=jaxlib),
        )

    module = ModuleRecord(
        name="jit_f", runs=[run("test", 0.00144, jaxlib="0.4.33"), run("reference-python-1", 0.00018)]
    )
    speed = compare_speed(module)
    assert (speed.slowest, speed.fastest, speed.slower, speed.ratio, speed.note) == (
        "test",
        "reference-python-1",
        "test",
        8.0,
        None,
    )
    module.speed = speed
    assert speed_cell(module) == "test (jaxlib 0.4.33) 8.00x"
    from xlatools.replay.outcome import table

    header, row = table([module]).splitlines()[:2]
    assert "slower" in header.split() and "test (jaxlib 0.4.33) 8.00x" in row
    assert "slower" not in table([ModuleRecord(name="jit_g", runs=[run("test", 0.1)])]).splitlines()[0]
    close = ModuleRecord(name="jit_f", runs=[run("test", 0.00100, count=1), run("reference-python-1", 0.00104)])
    close.speed = compare_speed(close)
    assert close.speed.slower is None and speed_cell(close) == "same (1.04x, rough)" and "rough" in close.speed.note
    cpu_only = ModuleRecord(name="jit_f", runs=[run("test", 0.001), run("reference-cpu", 0.002)])
    assert compare_speed(cpu_only) is None  # a reference on another platform is not an interpreter comparison
    failed = ModuleRecord(name="jit_f", runs=[run("test", 0.001), RunRecord(label="reference-python-1", python="p")])
    assert compare_speed(failed) is None


def test_a_process_status_is_read_while_it_runs(tmp_path):
    from xlatools.records.metrics import ModuleRef
    from xlatools.run.observer import read_statuses

    folder = tmp_path / "observer"
    folder.mkdir()
    now = {"v": 1, "pid": 7, "process": 1, "t": 5.0, "state": "executing", "m": 3, "name": "jit_step", "since": 4.0}
    now.update(
        last_compiled={"m": 3, "name": "jit_step", "t": 2.0}, last_executed={"m": 3, "name": "jit_step", "t": 4.0}
    )
    (folder / "7.status.json").write_text(json.dumps(now).ljust(4095) + "\n")  # padded, as the observer writes it
    (folder / "8.status.json").write_text('{"v": 1, "pid": 8, "sta')  # met mid-write (and never finished)
    (folder / "9.status.json").write_text(json.dumps({"v": 1, "pid": 9, "state": "waiting"}))
    first, second = read_statuses(tmp_path)
    assert (second.pid, second.process, second.state, second.name, second.since) == (7, 1, "executing", "jit_step", 4.0)
    assert second.last_compiled == ModuleRef(m=3, name="jit_step", t=2.0) and second.last_executed.t == 4.0
    assert (first.pid, first.state, first.last_executed) == (9, "python", None)


def test_a_reused_executable_id_keeps_the_gone_modules_calls(tmp_path, monkeypatch):
    """Python reuses a freed executable's address: the module it belonged to is written out, not lost."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_observer_out_under_test", HOOK_DIR / "_xlatools_observer_out.py")
    out = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(out)
    monkeypatch.setitem(out.state, "dir", str(tmp_path))
    out.open_files(4242)
    first = out.register(1, out.Module(1, "jit_stage"))
    first.wall, first.cpu, first.timed, first.untimed = [0.5], [0.25], 1, 3
    out.register(1, out.Module(2, "jit_add"))
    out.at_exit()
    lines = [json.loads(line) for line in (tmp_path / "4242.events.jsonl").read_text().splitlines()]
    assert [line["ev"] for line in lines] == ["start", "calls", "untimed", "end"]
    assert lines[1]["m"] == 1 and lines[1]["wall"] == [0.5] and lines[2]["counts"] == {"1": 3}
