"""The GPU checks of the verdict and GPU-operations issues, as one run: `scripts/gpu-check.sh` calls this.

`python3 -m scripts.gpu_check --out DIR [--platform gpu|cpu] [--budget-s S] [--only SECTION ...]`
writes DIR/gpu-check.json (every check with its numbers) and DIR/gpu.md (the page docs/gpu.md is made from).
On the CPU (`--platform cpu`) the sections run what does not need a GPU, so the script itself is tested here
before a lent device's minutes are spent on it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from .core import REPO, CheckResult, Context

# In the order they run; a section whose module is missing is listed as not run.
SECTIONS = ("precision", "determinism", "operations", "perf", "faults")


def machine_facts(python: str) -> dict[str, str]:
    facts: dict[str, str] = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    if shutil.which("nvidia-smi"):
        query = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        facts["gpus"] = query.stdout.strip() or query.stderr.strip()
    probe = (
        "import sys, jax, jaxlib; print(sys.version.split()[0], jax.__version__, jaxlib.__version__, "
        "jax.default_backend(), ','.join(d.device_kind for d in jax.devices()))"
    )
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120)
        parts = done.stdout.split() if done.returncode == 0 else []
    except subprocess.TimeoutExpired:
        parts = []
    if len(parts) >= 5:
        facts.update(python=parts[0], jax=parts[1], jaxlib=parts[2], backend=parts[3], devices=" ".join(parts[4:]))
    else:
        facts["jax"] = "probe failed"
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    facts["xlatools"] = git.stdout.strip() or "(not a git checkout)"
    return facts


def render(
    facts: dict[str, str],
    results: list[CheckResult],
    notes: dict[str, str],
    platform: str,
    sections: Sequence[str] = SECTIONS,
) -> str:
    lines = [
        "# xlatools on a real GPU",
        "",
        "Written by `scripts/gpu-check.sh` (one run; see that script for what each section does). "
        "Every number below was measured in that run; a check that did not run says why.",
        "",
        "| fact | value |",
        "|---|---|",
    ]
    lines += [f"| {key} | {value} |" for key, value in facts.items()]
    lines.append(f"| platform of this run | {platform} |")
    for section in sections:  # those asked for (--only): a page of the sections this run did
        rows = [r for r in results if r.section == section]
        lines += ["", f"## {notes.get(section + ':title', section)}", ""]
        if notes.get(section):
            lines += [notes[section], ""]
        if not rows:
            lines.append("No check of this section ran.")
            continue
        lines += ["| check | result | numbers | detail |", "|---|---|---|---|"]
        for row in rows:
            numbers = ", ".join(f"{k} {v}" for k, v in row.numbers.items())
            detail = row.detail.replace("|", "\\|").replace("\n", "<br>")[:600]
            lines.append(f"| {row.name} | {row.status} | {numbers} | {detail} |")
    totals = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "skip", "error")}
    lines += ["", "Totals: " + ", ".join(f"{v} {k}" for k, v in totals.items()), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-check", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--platform", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--budget-s", type=float, default=450.0)
    parser.add_argument("--only", nargs="*", choices=SECTIONS)
    options = parser.parse_args(argv)
    options.out.mkdir(parents=True, exist_ok=True)
    end = time.monotonic() + options.budget_s
    results: list[CheckResult] = []
    notes: dict[str, str] = {}
    facts = machine_facts(sys.executable)
    print("gpu-check:", json.dumps(facts), flush=True)
    for section in options.only or SECTIONS:
        try:
            module = importlib.import_module(f"scripts.gpu_check.{section}")
        except ModuleNotFoundError as missing:
            if missing.name != f"scripts.gpu_check.{section}":
                raise
            notes[section] = "(this section is not written yet)"
            continue
        notes[section + ":title"] = getattr(module, "TITLE", section)
        notes[section] = getattr(module, "ABOUT", "")
        deadline = min(end, time.monotonic() + float(getattr(module, "BUDGET_S", 150)))
        if deadline - time.monotonic() < 20:
            results.append(CheckResult(section, "(section)", "skip", "no time left in the run's budget"))
            continue
        with tempfile.TemporaryDirectory(prefix=f"gpu-check-{section}-") as work:
            context = Context(section, options.platform, Path(work), results, deadline)
            try:
                module.run(context)
            except Exception:  # a broken section must not cost the others their run
                results.append(CheckResult(section, "(section)", "error", traceback.format_exc()[-1500:]))
    (options.out / "gpu-check.json").write_text(
        json.dumps({"facts": facts, "platform": options.platform, "results": [r.as_dict() for r in results]}, indent=1)
    )
    (options.out / "gpu.md").write_text(render(facts, results, notes, options.platform, options.only or SECTIONS))
    failed = [r for r in results if r.status in ("fail", "error")]
    print(f"gpu-check: {len(results)} checks, {len(failed)} failed or broken; wrote {options.out}/gpu.md", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
