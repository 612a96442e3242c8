"""The real slowdown cases, plain programs without timing code (tests/fixtures/perf), measured by xlatools:

- jax-ml/jax#36799: a `lax.scan` with a float64 3x3 carry, about 0.2 ms per call on jax 0.4.31 and 1.5 ms on
  0.4.33 (0.4.32 is not on PyPI): bisected on `run_s` without a threshold; the one timing-based test, kept lean
  (3 runs per end) and robust on a loaded machine by an 8x step measured as per-call minima;
- jaxlib 0.10.2's temp growth (`memory_analysis()`: 4.5 MB on 0.10.1, 75.8 MB on 0.10.2, exact): `bisect flags`
  on the test interpreter (jax 0.10.2) names `--xla_cpu_experimental_ynn_fusion_type=-reduce`.

Cost on 2 cores: about 25 s and 15 s (the releases' environments cached like the release bisection's)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import require

PERF = Path(__file__).resolve().parents[2] / "fixtures" / "perf"


def test_the_scan_slowdown_is_bisected_without_a_threshold(bx, tmp_path):
    shutil.copy(PERF / "scan_f64_carry.py", tmp_path / "scan.py")
    args = ("bisect", "releases", "--good", "0.4.31", "--bad", "0.4.33", "--metric", "run_s", "--repeat", "3")
    done = bx(*args, "--json", "--", "scan.py")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["result"]["first_bad"]["key"] == "0.4.33" and data["result"]["last_good"]["key"] == "0.4.31"
    metric = data["result"]["metric"]
    assert metric["ratio"] > 3 and not metric["exact"] and metric["pairs_worse"] >= 0.9  # about 8x per call
    assert len(metric["good"]["values"]) >= 3 and metric["good"]["spread"] is not None
    assert data["result"]["report_lines"][0].startswith("run_s: good end jax 0.4.31")


def test_bisect_flags_names_the_switch_that_recovers_the_temp_growth(bx, tmp_path):
    import jaxlib

    require("jax", jaxlib.__version__ == "0.10.2", f"jaxlib 0.10.2 in the test interpreter (here {jaxlib.__version__})")
    shutil.copy(PERF / "vander_temp.py", tmp_path / "model.py")
    done = bx(
        "bisect", "flags", "--metric", "temp_bytes", "--switch", "cpu-ynn-reduce", "--json", "--", "model.py",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    flags = json.loads(done.stdout)["flags"]
    assert flags["jaxlib"] == "0.10.2" and flags["recovers"] == ["cpu-ynn-reduce"]
    [row] = flags["rows"]
    assert row["outcome"] == "good" and "temp_bytes 4.456e+06" in row["reason"]  # as on jaxlib 0.10.1
    assert "temp_bytes 7.576e+07 ± 0.0% (3 runs)" in flags["baseline"]  # exact: three runs of the program as it is
