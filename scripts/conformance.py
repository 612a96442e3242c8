#!/usr/bin/env python3
"""The conformance matrix: every corpus program (tests/corpus) x every xlatools step x every jaxlib.

    python scripts/conformance.py --jaxlib 0.10.2=PY [--jaxlib 0.4.30=PY ...] [--other 0.12=PY]
        [--tf-python PY] [--torch-xla-python PY] [--program NAME ...] [--step NAME ...]
        [--work DIR] [--forms N] [--json FILE] [--markdown FILE]

Each --jaxlib is a column (an interpreter made by scripts/make-corpus-venv.sh); --other is only
"another jaxlib" for the pack-other and diff-other steps (default: the next column). Prints the
table (Markdown) and writes it with --markdown, the cells with --json. Exit 1 when a cell is a
tool failure, a wrong verdict or blocked; 0 when every cell works or is refused by design.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.corpus.catalog import PROGRAMS, by_name  # noqa: E402
from tests.corpus.conformance import STEPS, Column, Interpreters, fresh_work, markdown, run_matrix  # noqa: E402


def column(text: str) -> Column:
    label, _, python = text.partition("=")
    if not python:
        raise argparse.ArgumentTypeError(f"{text}: expected LABEL=PYTHON, e.g. 0.10.2=/venvs/corpus-0.10.2/bin/python")
    return Column(label, python)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jaxlib", type=column, action="append", required=True, help="LABEL=PYTHON (a column)")
    parser.add_argument("--other", type=column, help="LABEL=PYTHON: another jaxlib for pack-other/diff-other")
    parser.add_argument("--tf-python"), parser.add_argument("--torch-xla-python")
    parser.add_argument("--program", action="append", default=[], help="a corpus program (default: all)")
    parser.add_argument("--step", action="append", default=[], choices=STEPS, help="a step (default: all)")
    parser.add_argument("--work", type=Path, default=Path("conformance-work"))
    parser.add_argument("--forms", type=int, default=4, help="modules per program replayed alone from each form")
    parser.add_argument("--json", type=Path), parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    programs = by_name(args.program) if args.program else list(PROGRAMS)
    steps = [s for s in STEPS if not args.step or s in args.step or s == "run"]
    interpreters = Interpreters(args.jaxlib, args.other, args.tf_python or None, args.torch_xla_python or None)
    started = time.perf_counter()
    matrix = run_matrix(
        interpreters,
        programs,
        steps,
        fresh_work(args.work.resolve()),
        say=lambda line: print(line, file=sys.stderr, flush=True),
        forms=args.forms,
    )
    table = markdown(matrix, steps) + f"\nmatrix time: {time.perf_counter() - started:.0f} s\n"
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    if args.json:
        args.json.write_text(
            json.dumps({**matrix.to_json(), "seconds": round(time.perf_counter() - started, 1)}, indent=1)
        )
    return 1 if matrix.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
