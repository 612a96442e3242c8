"""Run the hostile harness: `python -m scripts.hostile --help` (from the repository root)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import (
    cases_debug,
    cases_heldout,
    cases_packs,
    cases_processes,
    cases_records,
    cases_reduce,
    cases_round3,
    cases_round4,
    cases_secrets,
    cases_values,
    cases_writes,
    cases_yaml,
)
from . import fixtures
from .core import Case, Context, Result, execute

CLASSES = {
    "packs": cases_packs,
    "secrets": cases_secrets,
    "yaml": cases_yaml,
    "records": cases_records,
    "writes": cases_writes,
    "values": cases_values,
    "processes": cases_processes,
    **{cls: cases_round3 for cls in cases_round3.CLASSES},
    **{cls: cases_round4 for cls in cases_round4.CLASSES},
}  # round 3 (issue 33): one module, eight classes; round 4 (issue 43): one module, four (and round 3's leftovers)
# reduce, triage and debug (issues 20 and 21): cases of every class, in modules of their own
COMMANDS = (cases_reduce, cases_debug)


def all_cases() -> list[Case]:
    """Every case: those of each class, then the held-out ones (ids `h-...`, written after the fixes)."""
    modules = dict.fromkeys((*CLASSES.values(), *COMMANDS))  # once each, in order
    return [case for module in modules for case in module.cases()] + cases_heldout.cases()


def select(cases: list[Case], only: list[str], text: list[str], heldout: bool = False) -> list[Case]:
    return [
        c
        for c in cases
        if (not only or c.cls in only)
        and (not text or any(t in c.id for t in text))
        and (not heldout or c.name.startswith("h-"))
    ]


def summary(results: list[Result]) -> dict:
    classes = {}
    for cls in CLASSES:
        mine = [r for r in results if r.cls == cls and r.skipped is None]
        if mine or any(r.cls == cls for r in results):
            clean = sum(r.clean for r in mine)
            classes[cls] = {
                "cases": len(mine),
                "clean": clean,
                "share": round(clean / len(mine), 4) if mine else None,
                "skipped": sum(r.cls == cls and r.skipped is not None for r in results),
            }
    ran = [r for r in results if r.skipped is None]
    clean = sum(r.clean for r in ran)
    held = [r for r in ran if r.name.startswith("h-")]
    return {
        "classes": classes,
        "cases": len(ran),
        "clean": clean,
        "share": round(clean / len(ran), 4) if ran else None,
        "heldout": {"cases": len(held), "clean": sum(r.clean for r in held)},
    }


def markdown(results: list[Result], totals: dict, seconds: float) -> str:
    lines = ["# Hostile harness", "", "| class | cases | clean | share | skipped |", "|---|---:|---:|---:|---:|"]
    for cls, row in totals["classes"].items():
        share = f"{row['share']:.0%}" if row["share"] is not None else "-"
        lines.append(f"| {cls} | {row['cases']} | {row['clean']} | {share} | {row['skipped']} |")
    share = f"{totals['share']:.1%}" if totals["share"] is not None else "-"
    lines += [f"| **total** | {totals['cases']} | {totals['clean']} | **{share}** | |", ""]
    held = totals["heldout"]
    if held["cases"]:
        lines += [f"Held-out cases (`h-`, written after the fixes): {held['clean']} of {held['cases']} clean.", ""]
    lines += [f"{seconds:.0f} s", ""]
    failed = [r for r in results if r.skipped is None and not r.clean]
    if failed:
        lines += ["## Not handled cleanly", "", "| case | exit | problems |", "|---|---:|---|"]
        for r in failed:
            problems = "; ".join(p.replace("|", "\\|") for p in r.problems)[:400]
            lines.append(f"| {r.cls}/{r.name} | {r.exit if r.exit is not None else '-'} | {problems} |")
    skipped = [r for r in results if r.skipped]
    if skipped:
        lines += ["", f"Skipped: {len(skipped)} ({skipped[0].skipped})"]
    return "\n".join(lines) + "\n"


def _cli(args) -> list[str]:
    return args.xlatools.split() if args.xlatools else [sys.executable, "-m", "xlatools"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.hostile", description=__doc__)
    parser.add_argument("--only", action="append", default=[], choices=sorted(CLASSES), help="only this class")
    parser.add_argument("--filter", action="append", default=[], help="only cases whose id holds this text")
    parser.add_argument("--jobs", type=int, default=3, help="cases at once (default 3)")
    parser.add_argument("--out", type=Path, default=Path("hostile-report"), help="where the reports go")
    parser.add_argument("--work", type=Path, help="work folder (default: a fresh temporary one, removed after)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--budget", type=float, default=1800, help="stop starting cases after this many seconds")
    parser.add_argument("--xlatools", help="the CLI to drive (default: this interpreter's `-m xlatools`)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--heldout", action="store_true", help="only the held-out cases (h-...)")
    parser.add_argument("--reuse", action="store_true", help="reuse the fixtures of --work (made by an earlier run)")
    args = parser.parse_args(argv)
    cases = select(all_cases(), args.only, args.filter, args.heldout)
    if args.list:
        for case in cases:
            print(case.id)
        print(f"{len(cases)} cases", file=sys.stderr)
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)  # children get SIGINT's default back on exec
    work = args.work or Path(tempfile.mkdtemp(prefix="xlatools-hostile-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    ctx = Context(work.resolve(), _cli(args), sys.executable)
    started = time.monotonic()
    try:
        saved = work / "fx" / "paths.json"
        if args.reuse and saved.exists():
            ctx.paths.update(json.loads(saved.read_text()))
            shutil.rmtree(work / "cases", ignore_errors=True)
            shutil.rmtree(work / "tmp", ignore_errors=True)
        else:
            print(f"==> fixtures in {work}", file=sys.stderr)
            fixtures.make(ctx)
            cases_secrets.make_secret_run(ctx)
            cases_reduce.make_fixtures(ctx)
            saved.write_text(json.dumps(ctx.paths))
        print(f"==> {len(cases)} cases, {args.jobs} at a time", file=sys.stderr)
        results = run_all(cases, ctx, args.jobs, started + args.budget)
    finally:
        _unmount_all(work)
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    totals = summary(results)
    text = markdown(results, totals, time.monotonic() - started)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hostile.md").write_text(text)
    (args.out / "hostile.json").write_text(json.dumps({**totals, "results": [r.to_json() for r in results]}, indent=1))
    print(text)
    return 0


def run_all(cases: list[Case], ctx: Context, jobs: int, deadline: float) -> list[Result]:
    results: list[Result] = []

    def one(case: Case) -> Result:
        if time.monotonic() > deadline:
            return Result(case.cls, case.name, None, 0.0, [], skipped="time budget spent")
        result = execute(case, ctx)
        mark = "ok  " if result.clean else ("skip" if result.skipped else "FAIL")
        print(
            f"{mark} {case.id} ({result.seconds:.1f} s){': ' + '; '.join(result.problems)[:200] if result.problems else ''}",
            file=sys.stderr,
            flush=True,
        )
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, cases))
    return results


def _unmount_all(work: Path) -> None:
    """Any tmpfs a case left mounted (a crash of the harness): lazily unmounted."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return
    for line in mounts:
        point = line.split()[1]
        if point.startswith(str(work.resolve()) + os.sep):
            subprocess.run(["umount", "-l", point], capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
