"""`xlatools doctor` with the target probe cached: median wall time, and its ratio to
`python -c pass` (the cost of any Python start). Goal: under a second.
Usage: python benchmarks/doctor.py [--runs N] [--python TARGET]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

from _bench import alternate, installed_env, timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", default=sys.executable, help="the target interpreter doctor checks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xlatools-bench-doctor-") as cache:
        env = installed_env({**os.environ, "XLATOOLS_CACHE_DIR": cache, "JAX_PLATFORMS": "cpu"})
        env.pop("XLA_FLAGS", None)
        baseline_cmd = [sys.executable, "-c", "pass"]
        doctor_cmd = [sys.executable, "-m", "xlatools", "doctor", "--python", args.python]
        first = timed(doctor_cmd, check=False, env=env)  # probes the target, fills the cache
        timed(baseline_cmd, env=env)
        baseline, doctor = alternate(baseline_cmd, doctor_cmd, args.runs, check=False, env=env)
    base_med, doc_med = statistics.median(baseline), statistics.median(doctor)
    print(f"python -c pass            median {base_med * 1000:7.1f} ms over {args.runs} runs")
    print(f"xlatools doctor (cold)           {first * 1000:7.1f} ms (first run: probes the target)")
    print(f"xlatools doctor (cached)  median {doc_med * 1000:7.1f} ms over {args.runs} runs")
    print(f"ratio                     {doc_med / base_med:.1f}  (goal: doctor under 1000 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
