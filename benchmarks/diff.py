"""Diff of a synthetic 10k-file-per-side, ~1 GB pair: wall time and peak memory.

Generated on the fly in a temporary directory (removed after). Two measurements:
`xlatools diff A B --json` as installed (a subprocess: wall time, peak RSS of the child),
and the same diff in this process under tracemalloc (peak Python allocations), which
must stay far below the size of the dump: nothing reads a whole dump into memory.

    python benchmarks/diff.py [--modules 100] [--steps 98] [--lines 500]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _bench import installed_env, timed  # noqa: E402
from xlatools.compare.diff import diff_bundles  # noqa: E402
from xlatools.compare.synthetic import make_pair  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modules", type=int, default=100)
    parser.add_argument("--steps", type=int, default=98)
    parser.add_argument("--lines", type=int, default=450)
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="xlatools-diff-bench-"))
    try:
        start = time.perf_counter()
        pair = make_pair(work, modules=opts.modules, steps=opts.steps, lines=opts.lines)
        total = 2 * pair.bytes_per_side
        print(
            f"pair: 2 x {pair.files_per_side} files, {total / 1e9:.2f} GB in all "
            f"(generated in {time.perf_counter() - start:.1f} s)"
        )
        env = installed_env()
        argv = [sys.executable, "-m", "xlatools", "diff", str(pair.a), str(pair.b), "--json"]
        seconds = timed(argv, env=env)
        peak_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        print(
            f"xlatools diff (subprocess): {seconds:.2f} s, peak RSS {peak_rss / 2**20:.0f} MiB "
            f"({peak_rss / total:.3f} of the pair's size)"
        )
        tracemalloc.start()
        start = time.perf_counter()
        result = diff_bundles(pair.a, pair.b)
        traced = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        first = result.first_divergence()
        found = f"{first[0].a.name}: {first[1].label}" if first else "none"
        print(
            f"diff_bundles under tracemalloc: {traced:.2f} s, peak traced {peak / 2**20:.1f} MiB "
            f"({peak / total:.4f} of the pair's size)"
        )
        print(f"first diverging pass found: {found} (planted: {pair.changed_module}: pipeline/{pair.diverge_pass})")
        subprocess.run(["sync"], check=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
