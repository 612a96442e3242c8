"""The oracles of the conformance matrix: from one CLI call (and the files it left), the cell's outcome.

Each judge says what a correct answer must look like, independently of how xlatools got it:
a module replayed on the jaxlib that dumped it agrees with its own snapshot; a pack reproduces on
its own jaxlib; two runs of one program do not diverge; a pass divergence is only claimed where
the optimised HLO really differs; the report page runs without a console error.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.corpus.catalog import Program
from tests.helpers import BROWSERS, browse, root_attributes

FORMS_PER_PROGRAM = 4  # the program's first modules, each form replayed alone
FAILURES = ("compile-error", "runtime-error", "crash", "timeout", "input-error", "cannot-run")


@dataclass
class Call:
    rc: int
    out: str
    err: str
    seconds: float

    def json(self) -> dict:
        try:
            data = json.loads(self.out)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def tail(self, lines: int = 4) -> str:
        text = "\n".join((self.err.strip() or self.out.strip()).splitlines()[-lines:])
        return f"exit {self.rc}: {text}"[:800]


@dataclass
class Cell:
    outcome: str  # works, refused, tool-failure, wrong-verdict or blocked
    seconds: float = 0.0
    detail: str = ""


def _cell(outcome: str, seconds: float, detail: str = "") -> Cell:
    return Cell(outcome, round(seconds, 2), detail)


def _refusal(program: Program, call: Call):
    """A by-design refusal: exit 3 and a message that names why (a module for several devices is `skipped`: exit 3
    when nothing else was replayed, 0 beside modules that replayed ok)."""
    if program.refused and call.rc in (0, 3) and program.refused in (call.err + call.out).lower():
        said = [
            r.get("message")
            for m in call.json().get("modules") or []
            for r in m.get("runs") or []
            if r.get("failure") in ("cannot-run", "skipped")
        ]
        if call.rc == 0 and not said:
            return None
        return _cell("refused", call.seconds, (said[0] if said else call.tail(2))[:400])
    return None


def _module_problems(modules: list[dict]) -> tuple[list[str], list[str]]:
    """(wrong verdicts, tool failures) among replayed modules of the jaxlib that dumped them."""
    wrong, failed = [], []
    for m in modules:
        label = f"{m.get('id')} {m.get('name')}"
        if m.get("outcome") == "mismatch":
            worst = max((c.get("max_abs_error", 0) for c in m.get("comparisons", []) if not c.get("ok")), default=0)
            wrong.append(f"{label}: mismatch with its own snapshot (max abs {worst:.3g})")
        elif m.get("outcome") not in ("ok", "skipped"):  # skipped: a module for several devices, by design
            run = (m.get("runs") or [{}])[0]
            failed.append(f"{label}: {m.get('outcome')}: {(run.get('message') or '')[:300]}")
    return wrong, failed


def judge_replay(program: Program, call: Call):
    refused = _refusal(program, call)
    if refused:
        return refused
    modules = call.json().get("modules") or []
    wrong, failed = _module_problems(modules)
    if wrong:
        return _cell("wrong-verdict", call.seconds, "; ".join(wrong))
    if failed or call.rc != 0 or not modules:
        return _cell("tool-failure", call.seconds, "; ".join(failed) or call.tail())
    unchecked = [
        m
        for m in modules
        if m.get("files", {}).get("snapshot")
        and not any(c.get("against") == "snapshot" for c in m.get("comparisons", []))
    ]
    unsaid = [m["name"] for m in unchecked if not any("holds no result" in n for n in m.get("notes", []))]
    if unsaid:
        return _cell(
            "tool-failure", call.seconds, f"not compared with their snapshots, without a word: {', '.join(unsaid)}"
        )
    said = f"; {len(unchecked)} without a recorded result (donated buffers), said so" if unchecked else ""
    return _cell("works", call.seconds, f"{len(modules) - len(unchecked)} modules agree with their snapshots{said}")


def judge_replay_exact(program: Program, call: Call):
    """The bundle replayed at --atol 0 --rtol 0: every module compiles the run's own optimised module (the form auto
    chose) and agrees with its snapshot bit for bit."""
    cell = judge_replay(program, call)
    if cell.outcome != "works":
        return cell
    modules = call.json().get("modules") or []
    other = [
        f"{m.get('id')} {m.get('name')}: {'; '.join(m.get('notes') or [])[:300]}"
        for m in modules
        if m.get("compiled_as_run") is False
    ]
    unsaid = [
        m
        for m in modules
        if m.get("compiled_as_run") is False and not any(n.startswith("from its ") for n in m.get("notes") or [])
    ]
    if other and not unsaid:
        # No dumped form compiles the run's module on this jaxlib (0.4.x: no module.mlir, and text and proto convert
        # to another module; 0.12: LAPACK modules through Shardy), and the replay says what differs in each
        # module's notes: known and said, so refused, never a silent success
        return _cell(
            "refused",
            call.seconds,
            "no dumped form compiles the run's module on this jaxlib; said: " + "; ".join(other)[:300],
        )
    if other:
        return _cell("tool-failure", call.seconds, "not the run's module: " + "; ".join(other))
    checked = sum(1 for m in modules if m.get("compiled_as_run"))
    return _cell("works", call.seconds, f"{cell.detail}; {checked} compiled the run's own module, bit for bit")


def judge_text_snapshot(program: Program, modules: list[dict], replay, most: int = FORMS_PER_PROGRAM):
    """A module's before_optimizations text replayed alone, where the dump holds its snapshot: the snapshot's
    arguments are its inputs (said in a note) and its recorded result the expected output."""
    paired = [m for m in modules[:most] if m.get("files", {}).get("text") and m.get("files", {}).get("snapshot")]
    if not modules:
        return _cell("blocked", 0.0, "the bundle replay listed no module")
    if not paired:
        if program.refused or program.frontend != "jax" or not any(m.get("files", {}).get("snapshot") for m in modules):
            return _cell("refused", 0.0, "no module with both a text form and a snapshot (see its snapshot cell)")
        return _cell("tool-failure", 0.0, "no module with both a text form and a snapshot")
    seconds, problems, wrong, refused = 0.0, [], [], []
    for i, m in enumerate(paired):
        call = replay(m["files"]["text"], f"replay-{i}")
        seconds += call.seconds
        if call.rc == 2 and "elides large constants" in call.err:  # refused with the file to use instead
            refused.append(call.tail(2))
            continue
        replayed = call.json().get("modules") or []
        if replayed and all("refused by design" in json.dumps(r) for r in replayed):  # e.g. a host callback
            refused.append(call.tail(2))
            continue
        bad, failed = _module_problems(replayed)
        wrong += bad
        problems += failed or ([f"{m.get('name')}: {call.tail()}"] if call.rc != 0 and not bad else [])
        for r in replayed:
            said = any("sibling snapshot" in n for n in r.get("notes") or [])
            compared = any(c.get("against") == "snapshot" for c in r.get("comparisons") or [])
            unrecorded = any("holds no result" in n for n in r.get("notes") or [])
            if not said or not (compared or unrecorded):
                problems.append(
                    f"{r.get('name')}: the sibling snapshot was not used, or not said (notes: "
                    f"{'; '.join(r.get('notes') or [])[:200]})"
                )
    if wrong:
        return _cell("wrong-verdict", seconds, "; ".join(wrong))
    if problems:
        return _cell("tool-failure", seconds, "; ".join(problems))
    if refused and len(refused) == len(paired):
        return _cell("refused", seconds, refused[0][-300:])
    return _cell(
        "works",
        seconds,
        f"{len(paired) - len(refused)} text files replayed alone on their snapshots' "
        f"arguments and results" + (f"; {len(refused)} refused (elided constants)" if refused else ""),
    )


def judge_forms(
    program: Program,
    form: str,
    modules: list[dict],
    replay,
    jaxlib: str,
    most: int = FORMS_PER_PROGRAM,
    without_snapshots: bool = False,
):
    """Each of the program's first `most` modules replayed from one dumped file alone. `without_snapshots`: the
    run was refused with snapshots and made without them (its run cell says why)."""
    files = [m["files"][form] for m in modules[:most] if m.get("files", {}).get(form)]
    if not modules:
        return _cell("blocked", 0.0, "the bundle replay listed no module")
    if not files:
        why = (
            "jaxlib 0.4.x writes no module.mlir" if form == "mlir" and jaxlib.startswith("0.4.") else "not in the dump"
        )
        if form == "mlir" or program.refused:  # XLA writes no snapshot of a multi-device module
            return _cell("refused", 0.0, f"no {form} form: {why}")
        if (
            form == "snapshot" and program.frontend != "jax"
        ):  # TensorFlow 2.21 dies with snapshots; torch_xla writes none
            return _cell("refused", 0.0, f"no snapshot: {program.frontend} wrote none (see its run cell)")
        if form == "snapshot" and without_snapshots:
            return _cell("refused", 0.0, "no snapshot: the run was refused with snapshots (see its run cell)")
        return _cell("tool-failure", 0.0, f"no {form} form dumped")
    seconds, problems, wrong, refused = 0.0, [], [], []
    for i, path in enumerate(files):
        call = replay(path, f"replay-{i}")
        seconds += call.seconds
        refusal = _refusal(program, call)
        if refusal:
            refused.append(refusal.detail)
            continue
        if call.rc == 2 and "elides large constants" in call.err:  # refused with the file to use instead
            refused.append(call.tail(2))
            continue
        bad_verdicts, failed = _module_problems(call.json().get("modules") or [])
        wrong += bad_verdicts
        problems += failed or ([f"{Path(path).name}: {call.tail()}"] if call.rc != 0 and not bad_verdicts else [])
    if wrong:
        return _cell("wrong-verdict", seconds, "; ".join(wrong))
    if problems:
        return _cell("tool-failure", seconds, "; ".join(problems))
    if refused:
        return _cell("refused", seconds, refused[0])
    return _cell("works", seconds, f"{len(files)} of {len(modules)} modules")


def judge_pack_same(program: Program, pack: Call, run: Call | None):
    refused = _refusal(program, pack)
    if refused:
        return refused
    seconds = pack.seconds + (run.seconds if run else 0.0)
    expected = pack.json().get("expected") or {}
    tool = [
        f"{k}: {v}"
        for k, v in (expected.items() if isinstance(expected, dict) else [])
        if str(v).split(" ")[0] in FAILURES
    ]
    if pack.rc != 0 or run is None:
        return _cell("tool-failure", seconds, "pack: " + pack.tail())
    if tool:
        return _cell("tool-failure", seconds, "the pack records tool failures as expected outcomes: " + "; ".join(tool))
    answer = run.json()
    left_out = pack.json().get("left_out") or {}
    said = "; ".join(f"left out {k}: {v[:160]}" for k, v in left_out.items())
    if answer.get("outcome") == "reproduced" and run.rc == 1:
        return _cell("works", seconds, "reproduced (outputs identical)" + (f"; {said}" if said else ""))
    # a healthy program's pack records no failure: exit 5, and its replay here must give the same outcome
    if answer.get("outcome") == "nothing-to-reproduce" and run.rc == 5 and not answer.get("differences"):
        return _cell(
            "works",
            seconds,
            "nothing to reproduce, replayed the same (outputs identical)" + (f"; {said}" if said else ""),
        )
    if answer.get("outcome") in ("not-reproduced", "nothing-to-reproduce"):
        return _cell(
            "wrong-verdict", seconds, "same jaxlib, not reproduced: " + "; ".join(answer.get("differences", [])[:3])
        )
    return _cell("tool-failure", seconds, f"repro run: {answer.get('outcome')}: {answer.get('reason') or run.tail()}")


def judge_pack_other(program: Program, call: Call):
    answer = call.json()
    outcome = answer.get("outcome")
    if outcome == "reproduced" and call.rc == 1:
        return _cell("works", call.seconds, "reproduced on the other jaxlib")
    if outcome == "nothing-to-reproduce" and call.rc == 5 and not answer.get("differences"):
        return _cell("works", call.seconds, "nothing to reproduce; the same outcome on the other jaxlib")
    if outcome == "cannot-run" and call.rc == 3 and answer.get("reason"):
        return _cell("refused", call.seconds, "cannot run: " + answer["reason"][:300])
    if outcome in ("not-reproduced", "nothing-to-reproduce") and call.rc in (0, 5):
        got = [pair.get("got") or {} for pair in answer.get("modules", [])]
        if any(g.get("outcome") in FAILURES for g in got):
            return _cell(
                "wrong-verdict",
                call.seconds,
                "a tool failure answered as not-reproduced: " + "; ".join(answer.get("differences", [])[:3]),
            )
        return _cell(
            "works", call.seconds, "differs on the other jaxlib: " + "; ".join(answer.get("differences", [])[:3])
        )
    return _cell("tool-failure", call.seconds, call.tail())


def judge_diff_same(call: Call, run_seconds: float):
    data = call.json()
    seconds = call.seconds + run_seconds
    if call.rc != 0 or not data:
        return _cell("tool-failure", seconds, call.tail())
    diverging = [f"{m['a']['name']}" for m in data.get("modules", []) if (m.get("passes") or {}).get("divergence")]
    if data.get("modules_differ") or diverging or data.get("only_a") or data.get("only_b"):
        return _cell(
            "wrong-verdict",
            seconds,
            f"two runs of one program differ: {', '.join(diverging[:5])} "
            f"(only A {len(data.get('only_a', []))}, only B {len(data.get('only_b', []))})",
        )
    return _cell("works", seconds, f"{len(data.get('modules', []))} modules, no divergence")


def _after_text(root: Path, files: dict, ref: dict) -> bytes | None:
    """A module's optimised HLO as dumped, without its first line (the module name carries the id)."""
    for name in files:
        if name.startswith(f"module_{ref['id']:04d}.") and name.endswith("after_optimizations.txt"):
            data = (root / name).read_bytes()
            return data.split(b"\n", 1)[-1]
    return None


def judge_diff_other(call: Call, bundle_a: Path, bundle_b: Path):
    """No divergence claimed for a module whose optimised HLO is byte-identical; the headline is a module whose
    optimised HLO differs."""
    data = call.json()
    if call.rc != 0 or not data:
        return _cell("tool-failure", call.seconds, call.tail())
    files_a = {p.name for p in (bundle_a / "xla_dump").glob("*after_optimizations.txt")}
    files_b = {p.name for p in (bundle_b / "xla_dump").glob("*after_optimizations.txt")}
    false, real = [], []
    for m in data.get("modules", []):
        divergence = (m.get("passes") or {}).get("divergence")
        same_bytes = _after_text(bundle_a / "xla_dump", files_a, m["a"]) == _after_text(
            bundle_b / "xla_dump", files_b, m["b"]
        )
        if divergence and (m.get("same_output") or same_bytes):
            false.append(f"{m['a']['name']} ({divergence.get('label')})")
        elif not m.get("same_output"):
            real.append(m["a"]["name"])
    headline = data.get("headline")
    if headline and headline.get("same_output"):
        false.append(f"headline {headline.get('module')} has identical optimised HLO")
    if false:
        return _cell(
            "wrong-verdict",
            call.seconds,
            f"divergence claimed where the optimised HLO is the same: {', '.join(false[:6])}"
            f" ({len(false)} of {len(data.get('modules', []))})",
        )
    return _cell(
        "works", call.seconds, f"{len(real)} of {len(data.get('modules', []))} modules differ after optimisation"
    )


def render_page(page: Path, profile: Path) -> dict[str, str] | str:
    """The <html> attributes the page's script leaves after headless Chromium ran it, or why not."""
    browser = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    if browser is None:
        return "no Chromium here"
    done = browse(browser, page, profile, "--dump-dom")
    if done.returncode != 0:
        return f"chromium exit {done.returncode}: {done.stderr[-300:]}"
    return root_attributes(done.stdout)


def judge_report(call: Call, page: Path, profile: Path):
    if call.rc != 0 or not page.is_file():
        return _cell("tool-failure", call.seconds, call.tail())
    root = render_page(page, profile)
    if isinstance(root, str):
        return _cell("tool-failure", call.seconds, root)
    errors = json.loads(root.get("data-console-errors") or "null")
    if root.get("data-ready") != "1" or errors:
        return _cell("tool-failure", call.seconds, f"page not ready or console errors: {errors}")
    return _cell("works", call.seconds, f"{page.stat().st_size // 1024} KiB, no console error")
