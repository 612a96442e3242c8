"""How much does `xlatools run --dump` cost over launching the same program by hand?

Both sides run the same program in the same interpreter with the same XLA_FLAGS (HLO text
dumps into a fresh directory, compilation cache off); they alternate, so machine noise hits
both alike. Prints the medians of wall time and of CPU time (user + system, the program
included) and their ratios (goal: <= 1.10). The default program is the seed program
(benchmarks/seed_program.py, about 1 s by hand). Usage:
    python benchmarks/run_overhead.py [--runs 7] [--program seed|smoke:all|smoke:NAME|FILE.py] [--python PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from _bench import cpu_line, installed_env, report_ratio, timed

HERE = Path(__file__).resolve().parent
SMOKE = HERE.parent / "xlatools" / "run" / "smoke" / "main.py"
SEED = HERE / "seed_program.py"
ALL = "dot,matmul,conv,reduce,while,grad,collectives"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="alternating runs per side (at least 5)")
    parser.add_argument(
        "--program", default="seed", help="seed (the default), smoke:NAME[,NAME...], smoke:all, or a .py file"
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter with jax that runs the program")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    script = (
        str(SEED) if args.program == "seed" else os.path.abspath(args.program) if args.program.endswith(".py") else None
    )
    names = [] if script else (ALL if args.program == "smoke:all" else args.program.removeprefix("smoke:")).split(",")

    work = tempfile.mkdtemp(prefix="xlatools-bench-")
    base_env = {
        **installed_env(),
        "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
        "NO_COLOR": "1",
        "XLATOOLS_CACHE_DIR": os.path.join(work, "cache"),
    }
    base_env.pop("XLA_FLAGS", None)
    flags = ["--xla_dump_hlo_as_text"] + (
        ["--xla_force_host_platform_device_count=4"] if "collectives" in names else []
    )
    by_tool = [
        sys.executable,
        "-m",
        "xlatools",
        "run",
        script or args.program,
        "--dump",
        "--python",
        args.python,
        "--out",
        os.path.join(work, "artifacts"),
    ]

    def by_hand(i: int, cpu: list[float] | None = None) -> float:
        dump = os.path.join(work, f"hand-{i}")
        env = {
            **base_env,
            "JAX_ENABLE_COMPILATION_CACHE": "false",
            "XLA_FLAGS": " ".join(flags + [f"--xla_dump_to={dump}"]),
        }
        return timed([args.python, script] if script else [args.python, str(SMOKE), *names], env=env, cwd=work, cpu=cpu)

    try:
        timed(by_tool, env=base_env, cwd=work)  # warm-up: file caches, and the one-time target probe
        by_hand(-1)
        tool_times, hand_times, tool_cpu, hand_cpu = [], [], [], []
        for i in range(args.runs):
            hand_times.append(by_hand(i, hand_cpu))
            tool_times.append(timed(by_tool, env=base_env, cwd=work, cpu=tool_cpu))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cpu_ratio, line = cpu_line("by hand vs xlatools", hand_cpu, tool_cpu)
    if not args.json:
        print(line)
    report_ratio(hand_times, tool_times, 1.10, args.json, program=args.program, cpu_ratio=round(cpu_ratio, 3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
