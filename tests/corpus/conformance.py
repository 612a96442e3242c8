"""The conformance matrix: every corpus program x every xlatools step x every jaxlib, through the CLI
as a user runs it. Each cell ends in one outcome, with its time and what was seen:

  works          the step did its job and its verdict is true
  refused        refused by design, with a clear message (a host callback; a form this jaxlib never dumps)
  tool-failure   xlatools could not do its part
  wrong-verdict  xlatools answered, and the answer is false (a mismatch of a module with its own
                 snapshot on the same jaxlib, a divergence where the optimised HLO is the same, ...)
  blocked        a step it needs did not work

The judges below are the oracles: what must be true of a correct answer, checked from outside.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tests.corpus.catalog import Program
from tests.corpus.judges import (
    Call,
    Cell,
    judge_diff_other,
    judge_diff_same,
    judge_forms,
    judge_pack_other,
    judge_pack_same,
    judge_replay,
    judge_replay_exact,
    judge_report,
    judge_text_snapshot,
)

REPO = Path(__file__).resolve().parents[2]
STEPS = (
    "run",
    "inspect",
    "replay",
    "replay-exact",
    "text",
    "text-snapshot",
    "proto",
    "snapshot",
    "mlir",
    "pack-same",
    "pack-other",
    "diff-same",
    "diff-other",
    "report",
)
GOOD = ("works", "refused")


@dataclass
class Column:
    label: str  # the jaxlib, e.g. 0.10.2
    python: str


@dataclass
class Interpreters:
    columns: list[Column]
    other: Column | None = None  # used only as "another jaxlib"
    tensorflow: str | None = None
    torch_xla: str | None = None

    def other_than(self, column: Column) -> Column | None:
        if self.other and self.other.label != column.label:
            return self.other
        rest = [c for c in self.columns if c.label != column.label]
        return rest[0] if rest else None

    def runner(self, program: Program, column: Column) -> str | None:
        """The interpreter that runs the program: the column's jax, or the frontend's own."""
        return {"jax": column.python, "tensorflow": self.tensorflow, "torch-xla": self.torch_xla}[program.frontend]


@dataclass
class Matrix:
    cells: dict[str, dict[str, dict[str, Cell]]] = field(default_factory=dict)  # column -> program -> step -> cell

    def put(self, column: str, program: str, step: str, cell: Cell) -> None:
        self.cells.setdefault(column, {}).setdefault(program, {})[step] = cell

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for programs in self.cells.values():
            for steps in programs.values():
                for cell in steps.values():
                    out[cell.outcome] = out.get(cell.outcome, 0) + 1
        return out

    def bad(self) -> list[tuple[str, str, str, Cell]]:
        return [
            (c, p, s, cell)
            for c, programs in self.cells.items()
            for p, steps in programs.items()
            for s, cell in steps.items()
            if cell.outcome not in GOOD
        ]

    def to_json(self) -> dict:
        return {
            "steps": list(STEPS),
            "totals": self.totals(),
            "cells": {
                c: {p: {s: asdict(cell) for s, cell in steps.items()} for p, steps in programs.items()}
                for c, programs in self.cells.items()
            },
        }


class Runner:
    """Runs the CLI for one matrix, keeping each call's output in a log beside its work folder."""

    def __init__(self, work: Path, interpreters: Interpreters, say=print, forms: int = 4) -> None:
        self.work, self.interpreters, self.say, self.forms = work, interpreters, say, forms
        self.env = {
            **os.environ,
            "XLATOOLS_CACHE_DIR": str(work / "cache"),
            "NO_COLOR": "1",
            "COLUMNS": "200",
            "JAX_PLATFORMS": "cpu",
            "PYTHONPATH": "",
        }
        self.env.pop("XLA_FLAGS", None)
        self.runs: dict[tuple[str, str, str], tuple[Cell, str | None]] = {}  # (python, program, tag) -> (cell, bundle)

    def cli(self, cwd: Path, log: str, *args: str, timeout: float = 1200) -> Call:
        cwd.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "xlatools", *args],
                cwd=cwd,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            rc, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err = 124, str(exc.stdout or ""), f"matrix: no answer after {timeout:g} s"
        seconds = time.perf_counter() - started
        (cwd / f"{log}.log").write_text(
            f"$ xlatools {' '.join(args)}\nexit {rc} after {seconds:.1f} s\n--- stdout\n{out}\n--- stderr\n{err}\n"
        )
        return Call(rc, out, err, seconds)

    def run_program(self, program: Program, python: str, label: str, tag: str) -> tuple[Cell, str | None]:
        """`xlatools run --preset dump:full --preset dump:proto`, once per (interpreter, program, tag). Where that
        is refused with a reason (a dump flag this build crashes with), the run is made without snapshots."""
        key = (python, program.name, tag)
        if key not in self.runs:
            call, bundle = self._run(program, python, label, tag, FULL)
            if bundle:
                cell = Cell("works", call.seconds)
            elif refused_run(call):
                again, bundle = self._run(program, python, label, f"{tag}-nosnap", WITHOUT_SNAPSHOTS)
                cell = Cell(
                    "refused", call.seconds, refused_run(call) + ("" if bundle else f"; without: {again.tail()}")
                )
            else:
                cell = Cell("tool-failure", call.seconds, call.tail())
            self.runs[key] = (cell, bundle)
        return self.runs[key]

    def _run(
        self, program: Program, python: str, label: str, tag: str, presets: tuple[str, ...]
    ) -> tuple[Call, str | None]:
        args = [
            "run",
            str(program.path),
            *(x for p in presets for x in ("--preset", p)),
            "--python",
            python,
            "--out",
            f"runs-{tag}",
            "--json",
        ] + [f"--env={k}={v}" for k, v in program.env.items()]
        call = self.cli(self.work / label / program.name, f"run-{tag}", *args)
        ok = call.rc == 0 and call.json().get("status") == "ok"
        return call, call.json().get("bundle") if ok else None


FULL = ("dump:full", "dump:proto")
WITHOUT_SNAPSHOTS = ("dump:passes", "dump:proto")


def refused_run(call: Call) -> str:
    """Why a dumping run was refused or killed by a dump flag, as xlatools says it; "" when it was not."""
    lines = (call.err + "\n" + "\n".join(call.json().get("notes") or [])).splitlines()
    said = [line for line in lines if "this build dies using it" in line or "died in --xla_dump_hlo_snapshots" in line]
    return said[0].strip()[:400] if said else ""


def run_cell(runner: Runner, program: Program, column: Column, step: str, bundle: str) -> Cell:
    folder = runner.work / column.label / program.name
    other = runner.interpreters.other_than(column)
    python = column.python
    if step == "inspect":
        call = runner.cli(folder, "inspect", "inspect", bundle, "--json")
        ok = call.rc == 0 and call.json().get("modules")
        return Cell("works" if ok else "tool-failure", call.seconds, "" if ok else call.tail())
    if step == "replay":
        return judge_replay(
            program,
            runner.cli(folder / "replay", "replay", "replay", bundle, "--python", python, "--json", "--out", "."),
        )
    if step == "replay-exact":  # the run's own module, bit for bit on the jaxlib that dumped it
        return judge_replay_exact(
            program,
            runner.cli(
                folder / "replay-exact",
                "replay-exact",
                "replay",
                bundle,
                "--python",
                python,
                "--atol",
                "0",
                "--rtol",
                "0",
                "--json",
                "--out",
                ".",
            ),
        )
    if step == "text-snapshot":  # one dumped text file alone: its sibling snapshot gives the inputs and the result
        listing = _replayed_modules(folder)
        return judge_text_snapshot(
            program,
            listing,
            lambda path, log: runner.cli(
                folder / "form-text-snapshot", log, "replay", path, "--python", python, "--json", "--out", "."
            ),
            runner.forms,
        )
    if step in ("text", "proto", "snapshot", "mlir"):
        listing = _replayed_modules(folder)
        run_cell_ = runner.runs.get((runner.interpreters.runner(program, column), program.name, "a"), (None, None))[0]
        return judge_forms(
            program,
            step,
            listing,
            lambda path, log: runner.cli(
                folder / f"form-{step}", log, "replay", path, "--python", python, "--json", "--out", "."
            ),
            column.label,
            runner.forms,
            without_snapshots=bool(run_cell_ and run_cell_.outcome == "refused"),
        )
    if step == "pack-same":
        pack = runner.cli(
            folder / "pack",
            "pack",
            "repro",
            "pack",
            bundle,
            "-o",
            str(folder / "repro.tar.gz"),
            "--python",
            python,
            "--json",
            "--out",
            ".",
        )
        run = None
        if pack.rc == 0:
            run = runner.cli(
                folder / "pack-same",
                "run",
                "repro",
                "run",
                str(folder / "repro.tar.gz"),
                "--python",
                python,
                "--match",
                "outputs",
                "--json",
                "--out",
                ".",
            )
        return judge_pack_same(program, pack, run)
    if step == "pack-other":
        if other is None:
            return Cell("refused", 0.0, "no other jaxlib given")
        if not (folder / "repro.tar.gz").is_file():
            if program.refused:
                return Cell("refused", 0.0, "no pack: every module is refused by design (see pack-same)")
            return Cell("blocked", 0.0, "no pack (pack-same did not make one)")
        return judge_pack_other(
            program,
            runner.cli(
                folder / "pack-other",
                "run",
                "repro",
                "run",
                str(folder / "repro.tar.gz"),
                "--python",
                other.python,
                "--json",
                "--out",
                ".",
            ),
        )
    if step == "diff-same":
        second, bundle_b = runner.run_program(program, runner.interpreters.runner(program, column), column.label, "b")
        if bundle_b is None:
            return Cell("tool-failure", second.seconds, "second run: " + second.detail)
        call = runner.cli(folder, "diff-same", "diff", bundle, bundle_b, "--json")
        return judge_diff_same(call, second.seconds)
    if step == "diff-other":
        if program.frontend != "jax":
            return Cell("refused", 0.0, f"one {program.frontend} release installed: nothing to compare with")
        if other is None:
            return Cell("refused", 0.0, "no other jaxlib given")
        first, bundle_b = runner.run_program(program, other.python, other.label, "a")
        if bundle_b is None:
            return Cell("blocked", first.seconds, f"run on {other.label}: " + first.detail)
        return judge_diff_other(
            runner.cli(folder, "diff-other", "diff", bundle, bundle_b, "--json"), Path(bundle), Path(bundle_b)
        )
    if step == "report":
        partner = _report_partner(runner, program, column, other)
        page = folder / "report.html"
        call = runner.cli(folder, "report", "report", bundle, *([partner] if partner else []), "-o", str(page))
        return judge_report(call, page, folder / "chromium-profile")
    raise ValueError(step)


def _report_partner(runner: Runner, program: Program, column: Column, other: Column | None) -> str | None:
    candidates = [(other.python, "a")] if other and program.frontend == "jax" else []
    candidates.append((runner.interpreters.runner(program, column), "b"))
    for python, tag in candidates:
        found = runner.runs.get((python, program.name, tag))
        if found and found[1]:
            return found[1]
    return None


def _replayed_modules(folder: Path) -> list[dict]:
    """The modules the bundle replay chose (the program's own), with their dumped files."""
    log = folder / "replay" / "replay.log"
    try:
        text = log.read_text()
        payload = text.split("--- stdout\n", 1)[1].split("\n--- stderr\n", 1)[0]
        return json.loads(payload).get("modules") or []
    except (OSError, IndexError, ValueError):
        return []


def run_matrix(
    interpreters: Interpreters, programs: list[Program], steps: list[str], work: Path, say=print, forms: int = 4
) -> Matrix:
    """`forms`: how many of each program's modules the text/proto/snapshot/mlir steps replay alone."""
    runner = Runner(work, interpreters, say, forms)
    matrix = Matrix()
    for column in interpreters.columns:  # every run first: the other columns' runs serve diff-other and reports
        for program in programs:
            python = interpreters.runner(program, column)
            if python is None:
                matrix.put(
                    column.label, program.name, "run", Cell("blocked", 0.0, f"no {program.frontend} interpreter")
                )
                continue
            cell, _ = runner.run_program(program, python, column.label, "a")
            matrix.put(column.label, program.name, "run", cell)
            say(f"{column.label} {program.name} run: {cell.outcome} ({cell.seconds:.1f} s)")
    for column in interpreters.columns:
        for program in programs:
            python = interpreters.runner(program, column)
            _, bundle = runner.runs.get((python, program.name, "a"), (None, None))
            for step in (s for s in steps if s != "run"):
                cell = (
                    run_cell(runner, program, column, step, bundle)
                    if bundle
                    else Cell("blocked", 0.0, "the run failed")
                )
                matrix.put(column.label, program.name, step, cell)
                say(f"{column.label} {program.name} {step}: {cell.outcome} ({cell.seconds:.1f} s) {cell.detail[:300]}")
    return matrix


def markdown(matrix: Matrix, steps: list[str]) -> str:
    marks = {
        "works": "ok",
        "refused": "refused",
        "tool-failure": "**TOOL FAILURE**",
        "wrong-verdict": "**WRONG VERDICT**",
        "blocked": "blocked",
    }
    lines = []
    for column, programs in matrix.cells.items():
        lines += [f"### jaxlib {column}", "", "| program | " + " | ".join(steps) + " |", "|---|" + "---|" * len(steps)]
        for program, cells in programs.items():
            row = [
                f"{marks.get(cells[s].outcome, cells[s].outcome)} {cells[s].seconds:.0f}s" if s in cells else "-"
                for s in steps
            ]
            lines.append(f"| {program} | " + " | ".join(row) + " |")
        lines.append("")
    totals = matrix.totals()
    lines.append(
        "totals: " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())) + f" (of {sum(totals.values())})"
    )
    bad = matrix.bad()
    if bad:
        lines += ["", "not working:"] + [f"- {c} {p} {s}: {cell.outcome}: {cell.detail}" for c, p, s, cell in bad]
    refused = [
        (c, p, s, cell)
        for c, programs in matrix.cells.items()
        for p, steps_ in programs.items()
        for s, cell in steps_.items()
        if cell.outcome == "refused"
    ]
    if refused:
        lines += ["", "refused by design:"] + [f"- {c} {p} {s}: {cell.detail}" for c, p, s, cell in refused]
    return "\n".join(lines) + "\n"


def fresh_work(work: Path) -> Path:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    return work
