"""Reduce agrees with replay: before "the input is not interesting" (exit 2), rule out that xlatools lost it.

Two ways xlatools itself can lose a difference the run showed (each is cannot-run, exit 3, naming
what was lost; never the user's bad input):
1. the module's HLO text (what reduce edits) does not compile the run's own module (same jaxlib): what
   the run computed came from a module the text does not give back (jaxlib 0.4.26's oneDNN softmax
   rewrite, lost in the HLO -> StableHLO import, replay/as_run.py); the refusal names the module's
   StableHLO, which does (TextNotTheRunsModule: triage hands it over as the smallest reproducing form);
2. the module as the target printed it is interesting, and the reducer's own reprint of it (the
   first candidate) is not: the reprint changed something the difference depends on.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.errors import EnvironmentMissing, TextNotTheRunsModule

if TYPE_CHECKING:
    from xlatools.records.reduce import Verdict
    from xlatools.reduce.edits import Candidate
    from xlatools.reduce.evaluate import Evaluator
    from xlatools.reduce.plan import ReducePlan

SHOWN = 3


def refuse_lost_difference(
    plan: ReducePlan, evaluator: Evaluator, original: Candidate, source: Path, verdict: Verdict
) -> None:
    """Raise EnvironmentMissing when xlatools, not the input, lost the difference; return when the input is
    really not interesting (the caller says so, exit 2)."""
    not_run = not_the_runs_module(plan, source)
    if not_run:
        raise text_not_the_runs_module(
            plan, f"cannot reduce module {plan.module.label}", not_run, f"the oracle ({verdict.reason})"
        )
    lost = _lost_in_reprint(evaluator, original, source)
    if lost:
        raise EnvironmentMissing(
            f"cannot reduce module {plan.module.label}: the module as {plan.test.python} printed it is interesting, "
            f"but reduce's own reprint of it is not ({verdict.reason}); the reprint lost: {lost}",
            hint="this is a bug of xlatools' HLO reader/printer (reduce/hlo_text.py): please report it with the module",
        )


def text_not_the_runs_module(plan: ReducePlan, what: str, differs: str, oracle: str) -> TextNotTheRunsModule:
    """The refusal of a module whose HLO text is not the run's module, naming what reproduces instead."""
    stablehlo = plan.module.mlir
    if stablehlo is not None:
        hint = (
            f"the module's StableHLO {stablehlo} compiles the run's own module: replay it (`xlatools replay "
            f"{stablehlo}` with a --reference-python) to show the bug; `xlatools bisect passes` on the program "
            "itself names the pass"
        )
    else:
        hint = (
            "this dump holds no StableHLO of the module: run the program again with `xlatools run --preset "
            "dump:snapshots` (every dumping run keeps it) and replay that bundle; `xlatools bisect passes` on "
            "the program itself names the pass"
        )
    return TextNotTheRunsModule(
        f"{what}: its HLO text, which reduce and isolate edit, {differs.removeprefix('the replay ')}; what the run "
        f"computed is not in that text, so {oracle} says nothing about the bug",
        stablehlo=str(stablehlo) if stablehlo else None,
        differs=differs.split("; only in the run's")[0].removeprefix("the replay "),
        hint=hint,
    )


def not_the_runs_module(plan: ReducePlan, source: Path) -> str | None:
    from xlatools.replay.as_run import compare_with_run, dumped_by, run_files
    from xlatools.replay.jobs import read_answer

    test = read_answer(source / "test", plan.test)
    jaxlib = test.versions.jaxlib if test and test.versions else None
    if jaxlib is None or dumped_by(plan.request.source) != jaxlib or not (source / "test" / "optimized.txt").is_file():
        return None
    return compare_with_run(run_files(plan.module.run_stem), source / "test" / "optimized.txt")


def _lost_in_reprint(evaluator: Evaluator, original: Candidate, source: Path) -> str | None:
    from xlatools.reduce.hlo_text import print_module
    from xlatools.run.hlo_canon import canonical_hlo

    printed = source / "test" / "module.txt"
    if not printed.is_file():
        return None
    text = printed.read_text()
    folder = evaluator.folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "candidate.hlo.txt"
    path.write_text(text)
    try:
        as_printed = evaluator.run_oracle(0, original, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if as_printed.interesting is not True:
        return None
    ours, theirs = canonical_hlo(text).splitlines(), canonical_hlo(print_module(original.module)).splitlines()
    gone = [
        line[1:].strip()
        for line in difflib.unified_diff(ours, theirs, lineterm="", n=0)
        if line.startswith("-") and not line.startswith("---")
    ]
    return (
        "; ".join(line[:160] for line in gone[:SHOWN])
        + (f" (+{len(gone) - SHOWN} more lines)" if len(gone) > SHOWN else "")
        if gone
        else "nothing the text shows"
    )
