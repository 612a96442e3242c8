"""Drive one bisection: candidate source + test -> steps (run bundles) -> state file -> result.

The state is saved after every step (and on the way out, whatever happens), so an
interrupted bisection continues where it stopped when the same command runs again.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Protocol

from xlatools.bisect.checks import SkipStep, StepEnv, Test
from xlatools.bisect.engine import (BisectResult, EndpointProblem, Oracle, StepFunction, StepRecord, Verdict,
                                    bisect_ordered, ideal_steps)
from xlatools.bisect.state import State, point_link
from xlatools.bundle import safe_name, utc_now
from xlatools.errors import Interrupted, XlaToolsError


class Source(Protocol):
    """A candidate source: makes the environment in which one candidate is tested."""

    def prepare(self, key: str, label: str) -> StepEnv: ...


def progress(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(f"[bisect] {text}\n")
    sys.stderr.flush()


def make_step(state: State, source: Source, test: Test) -> StepFunction:
    steps_root = state.folder / "steps"

    def step(key: str, label: str) -> Verdict:
        n = len(state.steps) + 1
        progress(f"step {n}: {label}: preparing{where(state)}")
        t0 = time.monotonic()
        try:
            env = source.prepare(key, label)
            progress(f"step {n}: {label}: ready in {env.install_s:.1f} s{' (' + env.note + ')' if env.note else ''}; running the test")
            verdict = test.check(env, steps_root, f"step{n:02d}-{safe_name(label)}")
        except SkipStep as skip:
            verdict = Verdict("skip", skip.reason, skip.bundle, skip.install_s or (time.monotonic() - t0), 0.0)
        progress(f"step {n}: {label}: {verdict.outcome.upper()} ({verdict.reason}; install {verdict.install_s:.1f} s, "
                 f"run {verdict.run_s:.1f} s)")
        return verdict

    return step


def where(state: State) -> str:
    """For ordered searches: how many untested candidates are left between the known good and bad."""
    if state.kind == "passes" or not state.candidates:
        return ""
    index = {c["key"]: i for i, c in enumerate(state.candidates)}
    first = {index[s.key]: s.outcome for s in state.steps if s.attempt == 0 and s.key in index}
    lo = max((i for i, o in first.items() if o == "good"), default=0)
    hi = min((i for i, o in first.items() if o == "bad" and i > lo), default=len(state.candidates) - 1)
    left = sum(1 for i in range(lo + 1, hi) if i not in first)
    return f" ({left} untested between {state.candidates[lo]['label']} and {state.candidates[hi]['label']}, " \
           f"about {ideal_steps(left + 1)} more search steps)"


def oracle_for(state: State, source: Source, test: Test) -> Oracle:
    def record(_: StepRecord) -> None:
        state.save()

    return Oracle(state.steps, make_step(state, source, test), record, utc_now)


def guarded(state: State, body: Callable[[], None]) -> None:
    """Run `body`; whatever happens, the state says how it ended (running steps are never half-recorded)."""
    try:
        body()
    except EndpointProblem as exc:
        state.status, state.message = "stopped", exc.message
        raise
    except (KeyboardInterrupt, Interrupted):
        state.status, state.message = "running", "interrupted; run the same command again to continue"
        state.save()
        raise
    except XlaToolsError as exc:
        state.status, state.message = "failed", exc.message
        raise
    finally:
        state.save()


def run_ordered(state: State, source: Source, test: Test, confirm: int) -> BisectResult:
    """Binary search over state.candidates (oldest first); links last-good/first-bad; result into the state."""
    keys = [c["key"] for c in state.candidates]
    labels = [c["label"] for c in state.candidates]
    oracle = oracle_for(state, source, test)
    progress(f"{len(keys)} candidates from {labels[0]} to {labels[-1]}; about {ideal_steps(len(keys))} steps "
             f"after the two ends ({len(state.steps)} already done)")
    found: list[BisectResult] = []

    def body() -> None:
        result = bisect_ordered(keys, labels, oracle, confirm)
        found.append(result)
        state.result = ordered_result(state, result)
        state.status = "done"
        state.message = None
        _links(state)
        attach_diff(state)

    guarded(state, body)
    return found[0]


def attach_diff(state: State) -> None:
    """The diff of last-good vs first-bad, when the compare capability (diff/report) is part of this build.

    `xlatools.compare.diff.bisect_diff` writes diff.json and report.html under the bisection's diff/."""
    result = state.result or {}
    good, bad = (result.get(k, {}).get("bundle") for k in ("last_good", "first_bad"))
    if not good or not bad:
        return
    from xlatools.compare.diff import bisect_diff
    from xlatools.errors import XlaToolsError

    try:
        result["diff"] = {"available": True, **bisect_diff(Path(good), Path(bad), state.folder / "diff")}
    except (XlaToolsError, OSError) as exc:  # the answer stands without its diff
        result["diff"] = {"available": False, "note": f"no diff: {getattr(exc, 'message', exc)}; "
                          f"try `xlatools diff {good} {bad}`"}


def first_bundle(state: State, key: str) -> str | None:
    return next((s.bundle for s in state.steps if s.key == key and s.attempt == 0), None)


def ordered_result(state: State, result: BisectResult) -> dict:
    cands = state.candidates
    good, bad = cands[result.last_good], cands[result.first_bad]
    return {
        "last_good": {**good, "bundle": first_bundle(state, good["key"])},
        "first_bad": {**bad, "bundle": first_bundle(state, bad["key"])},
        "maybe_first_bad": [cands[i] for i in result.maybe_first_bad],
        "confirm": result.confirm,
        "flaky": result.flaky,
    }


def _links(state: State) -> None:
    result = state.result or {}
    for name in ("last-good", "first-bad"):
        entry = result.get(name.replace("-", "_")) or {}
        point_link(state.folder, name, entry.get("bundle"))


def summary(state: State) -> dict:
    """Numbers for the end of a bisection: candidates, steps vs ceil(log2 N), skips, time per step."""
    steps = state.steps
    fresh = [s for s in steps if s.role != "confirm"]
    install = sum(s.install_s for s in steps)
    run = sum(s.run_s for s in steps)
    return {
        "candidates": len(state.candidates),
        "steps": len(steps),
        "search_steps": len(fresh),
        # Binary search: ceil(log2 N) plus the two ends; ddmin (passes) has no such bound.
        "ideal_steps": ideal_steps(len(state.candidates)) + 2 if state.kind != "passes" else None,
        "skips": sum(1 for s in steps if s.outcome == "skip"),
        "confirm_runs": sum(1 for s in steps if s.role == "confirm"),
        "install_s": round(install, 3),
        "run_s": round(run, 3),
        "mean_step_s": round((install + run) / len(steps), 3) if steps else 0.0,
        "per_step": [{"n": s.n, "label": s.label, "outcome": s.outcome, "install_s": s.install_s, "run_s": s.run_s}
                     for s in steps],
    }


def render(state: State) -> str:
    """The human summary printed at the end (and on a finished bisection re-run)."""
    numbers = summary(state)
    lines = [f"bisect {state.kind}: {state.status}" + (f" ({state.message})" if state.message else ""),
             f"folder: {state.folder}"]
    for s in state.steps:
        bundle = f"  {Path(s.bundle).name}" if s.bundle else ""
        lines.append(f"  {s.n:>3} {s.role:<9} {s.label:<28} {s.outcome:<5} install {s.install_s:6.1f} s  run "
                     f"{s.run_s:6.1f} s  {s.reason}{bundle}")
    result = state.result or {}
    if "first_bad" in result:
        lines.append(f"last good: {result['last_good']['label']}  ({result['last_good']['bundle']})")
        lines.append(f"first bad: {result['first_bad']['label']}  ({result['first_bad']['bundle']})")
        if result["maybe_first_bad"]:
            lines.append("  skipped in between, so the first bad may also be: "
                         + ", ".join(c["label"] for c in result["maybe_first_bad"]))
        if result["flaky"]:
            lines.append(f"  FLAKY: the boundary steps disagreed on re-runs: {result['confirm']}")
        elif any(len(v) > 1 for v in result["confirm"].values()):
            lines.append(f"  confirmed: {result['confirm']}")
    for line in result.get("report_lines", []):
        lines.append(line)
    diff = result.get("diff") or {}
    if diff.get("available"):
        first = diff.get("first_divergence")
        where = f"first diverging pass {first['pass']} in {first['module']}; " if first else ""
        lines.append(f"last-good vs first-bad: {where}report {diff['report']}")
        if diff.get("note"):
            lines.append(f"  note: {diff['note']}")
    elif diff:
        lines.append(f"diff: {diff.get('note')}")
    ideal = f"; ceil(log2 N) + 2 ends = {numbers['ideal_steps']}" if numbers["ideal_steps"] is not None else ""
    lines.append(f"{numbers['candidates']} candidates, {numbers['steps']} steps ({numbers['search_steps']} search, "
                 f"{numbers['confirm_runs']} confirm{ideal}), "
                 f"{numbers['skips']} skipped; install {numbers['install_s']:.1f} s, run {numbers['run_s']:.1f} s, "
                 f"{numbers['mean_step_s']:.1f} s per step")
    return "\n".join(lines)
