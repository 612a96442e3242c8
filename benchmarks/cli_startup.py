"""CLI start-up time: median of `xlatools --help` against `python -c "import typer"`.

The CLI must not import jax, docker, httpx (or pydantic, rich) at start-up;
this prints the ratio so a regression shows as a number. Goal: ratio <= 1.5.
Usage: python benchmarks/cli_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from _bench import alternate, installed_env, timed

HEAVY = ("jax", "docker", "httpx", "pydantic", "rich")



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = installed_env()
    baseline_cmd = [sys.executable, "-c", "import typer"]
    cli_cmd = [sys.executable, "-m", "xlatools", "--help"]
    timed(baseline_cmd, env=env), timed(cli_cmd, env=env)  # warm the file cache
    baseline, cli = alternate(baseline_cmd, cli_cmd, args.runs, env=env)
    base_med, cli_med = statistics.median(baseline), statistics.median(cli)
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, xlatools.cli; print(' '.join(m for m in %r if m in sys.modules))" % (HEAVY,)],
        capture_output=True, text=True, check=True,
    )
    loaded = probe.stdout.strip()
    print(f"import typer       median {base_med * 1000:7.1f} ms over {args.runs} runs")
    print(f"xlatools --help    median {cli_med * 1000:7.1f} ms over {args.runs} runs")
    print(f"ratio              {cli_med / base_med:.2f}  (goal <= 1.5)")
    print(f"heavy modules imported at start-up: {loaded or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
