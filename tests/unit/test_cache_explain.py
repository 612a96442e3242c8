"""explain-cache's pure parts (issue 42): signatures part by part, the first differing HLO instruction, the
protobuf wire reader, recompiles and misses explained from records, the observer's events read into records and
the inspect table. No processes: tests/integration/test_cache_explain.py runs the real thing."""

from __future__ import annotations

import json
from pathlib import Path

from xlatools.cache_explain.api import exit_code
from xlatools.cache_explain.explain import explain_misses, explain_recompiles
from xlatools.cache_explain.hlo_diff import first_difference
from xlatools.cache_explain.parts import Side
from xlatools.cache_explain.signature import signature_causes
from xlatools.cache_explain.view import function_lines, function_rows, report_lines
from xlatools.cache_explain.wire import differences, leaves
from xlatools.records import to_json
from xlatools.records.cache_report import CacheReport
from xlatools.records.compiles import ArgPart, CacheOutcome, Compile, CompileLog, FunctionLog, KeyPart, Trace
from xlatools.records.metrics import RunMetrics
from xlatools.run.compile_events import read_compile_log, summarise

HLO = """HloModule jit_stamp, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY main.1 {
  x.1 = f32[8]{0} parameter(0)
  constant.1 = f32[] constant(155.5), metadata={op_name="jit(stamp)/add" source_file="p.py" source_line=3}
  broadcast.1 = f32[8]{0} broadcast(constant.1), dimensions={}
  ROOT add.1 = f32[8]{0} add(x.1, broadcast.1)
}
"""


def _x(shape=(8,), weak=False, sharding="S0") -> ArgPart:
    return ArgPart(path="x", shape=list(shape), dtype="float32", weak_type=weak, sharding=sharding)


def test_signatures_differ_part_by_part():
    static = ArgPart(path="n", static="2", static_type="int")
    causes = signature_causes([_x(), static], [_x((4,), weak=True), ArgPart(path="n", static="3", static_type="int")])
    assert [(c.part, c.before, c.after) for c in causes] == [
        ("shape", "[8]", "[4]"),
        ("weak type", "False", "True"),
        ("static argument", "2", "3"),
    ]
    assert signature_causes([_x(sharding=None)], [_x(sharding="S1")]) == []  # a host value has no sharding
    [gone] = signature_causes([_x(), static], [_x()])
    assert gone.part == "arguments" and "n is gone" in gone.detail


def test_the_first_differing_instruction_ignores_names_and_metadata():
    renamed = HLO.replace("constant.1", "constant.7").replace("source_line=3", "source_line=9")
    assert first_difference(HLO, renamed) is None
    found = first_difference(HLO, HLO.replace("155.5", "160.25"))
    assert found is not None and found.constant and found.computation == "main.1"
    assert found.before == "constant.1 = f32[] constant(155.5)" and found.after.endswith("constant(160.25)")
    shape = first_difference(HLO, HLO.replace("f32[8]", "f32[4]"))
    assert shape is not None and not shape.constant and "parameter(0)" in shape.after


def test_the_wire_reader_finds_the_field_that_differs():
    def message(value: int) -> bytes:  # field 3 { field 2: value, field 7: "ab" }
        inner = bytes([0x10, value]) + bytes([0x3A, 2]) + b"ab"
        return bytes([0x1A, len(inner)]) + inner

    assert leaves(message(5)) == {"3.2": "5", "3.7": "'ab'"}
    assert differences(message(5), message(6)) == [("3.2", "5", "6")]
    assert leaves(b"\xff") == {}  # not a message: nothing, no exception


def _outcome(key: str, state="miss", written=True, folder="/c", parts=()) -> CacheOutcome:
    """`parts`: (jax's name of the part, the values jax hashed)."""
    named = [KeyPart(name=n, sha256="|".join(v), values=list(v)) for n, v in parts]
    return CacheOutcome(state=state, key=key, written=written, directory=folder, parts=named)


def _function(*compiles: Compile, traces: list[Trace]) -> FunctionLog:
    return FunctionLog(id=1, name="f", qualname="f", file="/p/prog.py", line=3, traces=traces, compiles=list(compiles))


def _side(name: str, *functions: FunctionLog, exists=None) -> Side:
    log = CompileLog(pid=1, jax="0.10.2", traced=True, functions=list(functions))
    return Side(name=name, logs=[log], hlo=lambda c: None, entry_exists=exists or (lambda folder, key: None))


def test_recompiles_without_a_new_trace_or_with_a_new_function_object():
    traces = [
        Trace(number=1, function_object=1, signature=[_x()]),
        Trace(number=2, function_object=2, signature=[_x()]),
    ]
    compiles = [Compile(module=1, name="jit_f", trace=1), Compile(module=2, name="jit_f", trace=2)]
    compiles.append(Compile(module=3, name="jit_f", trace=None))
    found = explain_recompiles(_side("A", _function(*compiles, traces=traces)))
    assert [(e.module, e.compared_with, [c.part for c in e.causes]) for e in found] == [
        (2, 1, ["function object"]),
        (3, 2, ["no new trace"]),
    ]
    assert exit_code(CacheReport(run_a="a", explanations=found)) == 1 and exit_code(CacheReport(run_a="a")) == 0


def test_a_miss_under_the_same_key_says_why_run_a_did_not_write_it():
    trace = [Trace(number=1, function_object=1, signature=[_x()])]
    written = _outcome("k1", written=False)
    written.reason, written.why = "min_compile_time", "below the minimum compile time: XLA took 0.1 s < 1 s"
    a = _side("A", _function(Compile(module=1, name="jit_f", trace=1, cache=written), traces=trace))
    b = _side("B", _function(Compile(module=1, name="jit_f", trace=1, cache=_outcome("k1")), traces=trace))
    [miss], notes = explain_misses(a, b)
    assert [c.part for c in miss.causes] == ["minimum compile time"] and "did not write it" in miss.causes[0].detail
    assert not notes
    elsewhere = _side(
        "B", _function(Compile(module=1, name="jit_f", trace=1, cache=_outcome("k1", folder="/d")), traces=trace)
    )
    a = _side("A", _function(Compile(module=1, name="jit_f", trace=1, cache=_outcome("k1")), traces=trace))
    [miss], _ = explain_misses(a, elsewhere)
    assert miss.causes[0].part == "cache directory" and (miss.causes[0].before, miss.causes[0].after) == ("/c", "/d")
    gone = _side(
        "A",
        _function(Compile(module=1, name="jit_f", trace=1, cache=_outcome("k1")), traces=trace),
        exists=lambda f, k: False,
    )
    [miss], _ = explain_misses(gone, b)
    assert miss.causes[0].part == "entry gone"


def test_a_miss_under_another_key_names_each_part_jaxlib_first():
    trace = [Trace(number=1, function_object=1, signature=[_x()])]
    a_cache = _outcome("k1", parts=[("computation", ["c"]), ("XLA flags", []), ("jax_lib version", ["0.10.2"])])
    b_cache = _outcome(
        "k2", parts=[("computation", ["c"]), ("XLA flags", ["--xla_cpu_x=1"]), ("jax_lib version", ["0.4.30"])]
    )
    a = _side("A", _function(Compile(module=1, name="jit_f", trace=1, cache=a_cache), traces=trace))
    b = _side("B", _function(Compile(module=4, name="jit_f", trace=1, cache=b_cache), traces=trace))
    [miss], _ = explain_misses(a, b)
    assert [c.part for c in miss.causes] == ["jaxlib version", "XLA flags"]
    assert miss.causes[0].source == "jax" and "added --xla_cpu_x=1" in miss.causes[1].detail
    report = CacheReport(run_a="A", run_b="B", misses=1, explanations=[miss], summary="0 recompile(s), 1 miss")
    text = "\n".join(report_lines(report))
    assert "miss in run B: f (prog.py:3): module #4 vs run A's #1" in text and "[jax key] jaxlib version" in text
    assert json.loads(json.dumps(to_json(report)))["explanations"][0]["causes"][0]["after"] == "0.4.30"


def test_the_observers_events_become_records_and_the_worst_function_comes_first(tmp_path: Path):
    events = [
        {"ev": "start", "v": 1, "pid": 7, "process": None},
        {"ev": "jax", "jax": "0.10.2", "jaxlib": "0.10.2", "hooks": ["compile", "trace"]},
        {"ev": "function", "f": 1, "name": "f", "qualname": "f", "file": "/p/a.py", "line": 3, "internal": False},
        {"ev": "function", "f": 2, "name": "g", "qualname": "g", "file": "/p/a.py", "line": 9, "internal": False},
    ]
    for number, shape in ((1, [8]), (2, [4])):
        sig = [{"p": "x", "shape": shape, "dtype": "float32", "weak": False, "sharding": None}]
        events.append({"ev": "trace", "f": 1, "tr": number, "obj": 1, "s": 0.01, "site": "/p/a.py:20", "sig": sig})
        cache = {"state": "miss", "written": False, "reason": "min_compile_time", "why": "below", "key": f"k{number}"}
        events.append(
            {"ev": "compile_end", "m": number, "name": "jit_f", "f": 1, "tr": number, "s": 0.5, "cache": cache}
        )
    events.append({"ev": "trace", "f": 2, "tr": 3, "s": 0.01, "sig": []})
    events.append({"ev": "compile_end", "m": 3, "name": "jit_g", "f": 2, "tr": 3, "s": 2.0, "hlo": "7.hlo/3.jit_g.txt"})
    file = tmp_path / "7.events.jsonl"
    file.write_text("\n".join(json.dumps(e) for e in events) + "\n{cut sho")
    log = read_compile_log(file)
    assert log is not None and log.traced and [f.name for f in log.functions] == ["f", "g"]
    f = log.functions[0]
    assert [c.trace for c in f.compiles] == [1, 2] and f.trace_of(f.compiles[1]).signature[0].shape == [4]
    assert log.functions[1].compiles[0].hlo == "observer/7.hlo/3.jit_g.txt"
    rows, recompiles = summarise([log])
    assert recompiles == 1 and [r.name for r in rows] == ["f", "g"]  # f lost 0.51 s; g compiled once (2 s)
    assert (rows[0].misses, rows[0].not_cached, rows[0].signatures, rows[0].not_cached_why) == (2, 2, 2, ["below"])
    metrics = RunMetrics(functions=rows, recompiles=recompiles)
    table = function_rows(metrics)
    assert table[0][0] == "function" and table[1][:4] == ("f", "a.py:3", "2", "2")
    assert function_lines(metrics, "B")[-1] == "recompiles: 1 (why, part by part: xlatools explain-cache B)"
