"""A release bisection here vs as Slurm jobs (`bisect releases --executor slurm --jobs K`), and Slurm's
per-step overhead (sbatch to the step's first task starting; goal: under 1 s).

The tests' fixture (jax 0.4.28..0.4.31, `jax.lax.xeinsum` removed in 0.4.31), every environment cached
(--cache, default the CI's bisect cache), on a one-node cluster this script starts (scripts/slurm-cluster.sh,
needs root and Debian's slurmctld/slurmd/slurm-client/munge) and stops. Each run is a new bisection; the
modes alternate between repeats so machine drift hits all alike. Prints ratios, asserts nothing.

Usage: python benchmarks/slurm_bisect.py [--repeats 2] [--cache DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository's packages

from benchmarks._bench import installed_env, release_bisection  # noqa: E402

GOOD, BAD = "0.4.28", "0.4.31"
CI_CACHE = Path.home() / ".cache" / "xlatools-ci" / "bisect-envs"
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slurm-cluster.sh"
MODES = {"local K=1": [], "slurm K=1": ["--executor", "slurm"], "slurm K=2": ["--executor", "slurm", "--jobs", "2"]}


def overheads(answer: dict) -> list[float]:
    """Seconds from sbatch to the first task of each step (the step manifests' slurm.started_s)."""
    found = []
    for step in answer["steps"]:
        manifest = json.loads((Path(step["bundle"]) / "manifest.json").read_text())
        if (manifest.get("slurm") or {}).get("started_s") is not None:
            found.append(manifest["slurm"]["started_s"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=CI_CACHE)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xlatools-bench-slurm-") as folder:
        cluster = Path(folder) / "cluster"
        started = subprocess.run([str(SCRIPT), "start", str(cluster)], capture_output=True, text=True)
        if started.returncode != 0:
            raise SystemExit(f"the test cluster did not start: {started.stderr.strip()}")
        try:
            env = installed_env(
                {
                    **os.environ,
                    "SLURM_CONF": str(cluster / "slurm.conf"),
                    "JAX_PLATFORMS": "cpu",
                    "XLATOOLS_CACHE_DIR": str(args.cache),
                }
            )
            walls: dict[str, list[float]] = {mode: [] for mode in MODES}
            starts: dict[str, list[float]] = {mode: [] for mode in MODES}
            for repeat in range(args.repeats):
                order = list(MODES) if repeat % 2 == 0 else list(reversed(MODES))
                for mode in order:
                    work = Path(folder) / f"{mode.replace(' ', '-')}-{repeat}"
                    work.mkdir()
                    wall, answer = release_bisection(work, env, GOOD, BAD, *MODES[mode])
                    assert answer["result"]["first_bad"]["key"] == BAD, answer["result"]
                    walls[mode].append(wall)
                    starts[mode] += overheads(answer)
                    print(f"  {mode}: {wall:.1f} s, {len(answer['steps'])} steps", file=sys.stderr)
        finally:
            subprocess.run([str(SCRIPT), "stop", str(cluster)], capture_output=True)
    local = statistics.median(walls["local K=1"])
    rows = {
        mode: {
            "wall_s_median": round(statistics.median(w), 2),
            "vs_local": round(statistics.median(w) / local, 2),
            "submit_to_start_s_median": round(statistics.median(starts[mode]), 3) if starts[mode] else None,
            "submit_to_start_s_max": round(max(starts[mode]), 3) if starts[mode] else None,
        }
        for mode, w in walls.items()
    }
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"bisect releases {GOOD}..{BAD}, environments cached, {args.repeats} repeats (median):")
    for mode, row in rows.items():
        overhead = (
            (
                f"; sbatch -> first task {row['submit_to_start_s_median']:.2f} s median, "
                f"{row['submit_to_start_s_max']:.2f} s max"
            )
            if row["submit_to_start_s_median"] is not None
            else ""
        )
        print(f"  {mode:<10} {row['wall_s_median']:6.1f} s  ({row['vs_local']:.2f} x local){overhead}")


if __name__ == "__main__":
    main()
