"""CLI start-up time: `xlatools --help` against `python -c "import typer"` (goal: ratio <= 1.4).

The CLI must not import jax, docker, httpx, pydantic or rich at start-up; this prints the
ratio of the medians (wall and CPU time, alternating runs) so a regression shows as a number,
and the floor under it: a bare Python start and typer's own import.
Usage: python benchmarks/cli_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from _bench import installed_env, timed

HEAVY = ("jax", "docker", "httpx", "pydantic", "rich", "yaml", "numpy", "psutil", "tenacity")
GOAL = 1.4


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = installed_env()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import typer": [sys.executable, "-c", "import typer"],
        "import xlatools.cli": [sys.executable, "-c", "import xlatools.cli"],
        "xlatools --help": [sys.executable, "-m", "xlatools", "--help"],
        "xlatools run --help": [sys.executable, "-m", "xlatools", "run", "--help"],
    }
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():  # warm the file cache
        timed(argv, env=env)
    for _ in range(args.runs):  # alternating, so machine drift hits every command alike
        for name, argv in commands.items():
            wall[name].append(timed(argv, env=env, cpu=cpu[name]))
    for name in commands:
        print(
            f"{name:22s} median {statistics.median(wall[name]) * 1000:7.1f} ms wall, "
            f"{statistics.median(cpu[name]) * 1000:7.1f} ms CPU over {args.runs} runs"
        )
    for label, times in (("wall", wall), ("CPU", cpu)):
        base, cli = statistics.median(times["import typer"]), statistics.median(times["xlatools --help"])
        print(f"ratio ({label:4s})         {cli / base:.2f}  (xlatools --help / import typer; goal <= {GOAL})")
    bare, typer_ = statistics.median(cpu["python -c pass"]), statistics.median(cpu["import typer"])
    print(
        f"typer's own import: {(typer_ - bare) * 1000:.1f} ms CPU of {typer_ * 1000:.1f} ms (the floor of any typer CLI)"
    )
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, xlatools.cli; print(' '.join(m for m in %r if m in sys.modules))" % (HEAVY,),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    print(f"heavy modules imported at start-up: {probe.stdout.strip() or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
