"""Pass level: the two per-pass step sequences aligned, and the first pass after which they diverge.

A per-pass dump holds a step only for passes that changed the module (plus pipeline starts),
so the module after any aligned row is the newest step seen so far on that side. Each step
file is read once in chunks (hashes + instruction count); canonical text is computed only
where the raw files differ, and only until the first divergence.
"""

from __future__ import annotations

import difflib

from xlatools.compare.model import Divergence, PassAlignment, PassRow, StepInfo
from xlatools.compare.modules import Fingerprints, canonical_file
from xlatools.compare.textdiff import TextDiff, text_diff
from xlatools.run.dump_stats import hlo_file_stats
from xlatools.run.dumps import DumpIndex, Module, pass_details


def step_infos(index: DumpIndex, module: Module) -> list[StepInfo]:
    """Each step with its instruction count and whether it changed the module (header line ignored)."""
    return [
        StepInfo(s.step, s.pipeline, s.pass_name, s.file, s.instructions, s.changed)
        for s in pass_details(index, module)
    ]


def align(a: list[StepInfo], b: list[StepInfo]) -> list[PassRow]:
    """Rows of the two sequences lined up by (pipeline, pass); replaced runs paired one to one."""
    keys_a = [(s.pipeline, s.pass_name) for s in a]
    keys_b = [(s.pipeline, s.pass_name) for s in b]
    rows: list[PassRow] = []
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows += [PassRow("same", a[i], b[j]) for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        rows += _replaced(a[i1:i2], b[j1:j2], set(keys_a), set(keys_b))
    _mark_moved(rows)
    return rows


def _replaced(left: list[StepInfo], right: list[StepInfo], keys_a: set, keys_b: set) -> list[PassRow]:
    """One run of A's steps replaced by one of B's: a pass in the other's place within the same
    pipeline is 'renamed' (unless it runs elsewhere on the other side); the rest is one-sided."""
    rows: list[PassRow] = []
    i = j = 0
    while i < len(left) or j < len(right):
        x = left[i] if i < len(left) else None
        y = right[j] if j < len(right) else None
        if (
            x
            and y
            and x.pipeline == y.pipeline
            and (x.pipeline, x.pass_name) not in keys_b
            and (y.pipeline, y.pass_name) not in keys_a
        ):
            rows.append(PassRow("renamed", x, y))
            i, j = i + 1, j + 1
        elif x and (y is None or i * max(len(right), 1) <= j * max(len(left), 1)):
            rows.append(PassRow("only_a", x, None))
            i += 1
        else:
            rows.append(PassRow("only_b", None, y))
            j += 1
    return rows


def _mark_moved(rows: list[PassRow]) -> None:
    """A one-sided pass that also runs, one-sided, elsewhere on the other side was reordered."""
    only_a = {(r.a.pipeline, r.a.pass_name) for r in rows if r.kind == "only_a" and r.a}
    only_b = {(r.b.pipeline, r.b.pass_name) for r in rows if r.kind == "only_b" and r.b}
    both = only_a & only_b
    for row in rows:
        step = row.a or row.b
        if row.kind in ("only_a", "only_b") and step and (step.pipeline, step.pass_name) in both:
            row.kind = "moved"


def _states(rows: list[PassRow], first_a: str, first_b: str) -> list[tuple[str, str] | None]:
    """The module on each side after each row; None for a row that cannot diverge: a step on one side only
    that did not change the module (a pipeline-start one jaxlib dumps and the other does not)."""
    states: list[tuple[str, str] | None] = []
    state_a, state_b = first_a, first_b
    for row in rows:
        one_sided = row.a is None or row.b is None
        step = row.a or row.b
        if one_sided and step is not None and step.changed is False:
            states.append(None)
            continue
        state_a = row.a.file if row.a else state_a
        state_b = row.b.file if row.b else state_b
        states.append((state_a, state_b))
    return states


def find_divergence(
    rows: list[PassRow],
    a: tuple[DumpIndex, Module],
    b: tuple[DumpIndex, Module],
    full: bool,
    prints: Fingerprints,
    same_output: bool = False,
) -> Divergence | None:
    """The pass after which the two modules part for good: the first row after the last one where their HLO
    agrees. None when the optimised modules are the same: passes that differ on the way and converge again
    (one jaxlib dumps an extra scheduling step, prints a module another way) are no divergence."""
    (index_a, module_a), (index_b, module_b) = a, b
    by_file_a = {s.file: s.digest for s in module_a.steps}
    by_file_b = {s.file: s.digest for s in module_b.steps}
    if module_a.before_file is None or module_b.before_file is None or same_output:
        return None
    first_a, first_b = (
        hlo_file_stats(index_a.root / module_a.before_file),
        hlo_file_stats(index_b.root / module_b.before_file),
    )
    raw_equal = first_a is not None and first_b is not None and first_a.digest == first_b.digest
    if not raw_equal and prints.of(index_a.root / module_a.before_file) != prints.of(
        index_b.root / module_b.before_file
    ):
        files = (
            (index_a, module_a.before_file, module_a.before_file),
            (index_b, module_b.before_file, module_b.before_file),
        )
        return _divergence(-1, None, *files, full)

    def agree(number: int, pair: tuple[str, str]) -> bool:
        raw_a, raw_b = by_file_a.get(pair[0]), by_file_b.get(pair[1])
        same = (raw_a is not None and raw_a == raw_b) or prints.of(index_a.root / pair[0], raw_a) == prints.of(
            index_b.root / pair[1], raw_b
        )
        rows[number].same_hlo = same
        return same

    states = _states(rows, module_a.before_file, module_b.before_file)
    counted = [number for number, pair in enumerate(states) if pair is not None]
    agreeing = [n for n in counted if agree(n, states[n])]  # every row: the report shows where they agree
    last_agreement = agreeing[-1] if agreeing else None
    after = [n for n in counted if last_agreement is None or n > last_agreement]
    if not after:
        return None
    number = after[0]
    previous = max((n for n in counted if n < number), default=None)
    before = states[previous] if previous is not None else (module_a.before_file, module_b.before_file)
    return _divergence(
        number, rows[number], (index_a, before[0], states[number][0]), (index_b, before[1], states[number][1]), full
    )


def _divergence(
    number: int, row: PassRow | None, a: tuple[DumpIndex, str, str], b: tuple[DumpIndex, str, str], full: bool
) -> Divergence:
    (index_a, before_a, after_a), (index_b, before_b, after_b) = a, b
    text = {
        key: canonical_file(index.root / name)
        for key, index, name in (
            ("a_before", index_a, before_a),
            ("a_after", index_a, after_a),
            ("b_before", index_b, before_b),
            ("b_after", index_b, after_b),
        )
    }
    step = (row.a or row.b) if row else None
    diffs: list[TextDiff] = []
    if row is not None:
        if row.a:
            diffs.append(
                text_diff(
                    f"A: what {row.a.pass_name} did", text["a_before"], text["a_after"], "A before", "A after", full
                )
            )
        if row.b:
            diffs.append(
                text_diff(
                    f"B: what {row.b.pass_name} did", text["b_before"], text["b_after"], "B before", "B after", full
                )
            )
    diffs.append(
        text_diff(
            "A vs B after this pass" if row else "A vs B before optimisation",
            text["a_after"],
            text["b_after"],
            "A",
            "B",
            full,
        )
    )
    return Divergence(
        number,
        step.pipeline if step else None,
        row.a.pass_name if row and row.a else None,
        row.b.pass_name if row and row.b else None,
        {"a_before": before_a, "a_after": after_a, "b_before": before_b, "b_after": after_b},
        diffs,
    )


def align_passes(
    a: tuple[DumpIndex, Module],
    b: tuple[DumpIndex, Module],
    full: bool = False,
    prints: Fingerprints | None = None,
    same_output: bool = False,
) -> PassAlignment:
    (index_a, module_a), (index_b, module_b) = a, b
    missing = [label for label, m in (("A", module_a), ("B", module_b)) if not m.steps]
    if missing:
        return PassAlignment(
            [], None, note=f"no per-pass dumps on {' and '.join(missing)} (run with --preset dump:passes)"
        )
    rows = align(step_infos(index_a, module_a), step_infos(index_b, module_b))
    divergence = find_divergence(
        rows, (index_a, module_a), (index_b, module_b), full, prints or Fingerprints(), same_output
    )
    return PassAlignment(rows, divergence)
