"""Is a candidate interesting? Verdicts from replay's run records, or from a check script (pure but the script).

A verdict is about the candidate module only: a reference that cannot run, or a script
that answers 125, says nothing about it (interesting = None, "skip"), and the reduction
treats that candidate as not kept.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlatools.errors import EnvironmentMissing
from xlatools.reduce.plan import OracleSpec
from xlatools.replay.records import RunRecord

FAILURE_KINDS = ("compile-error", "runtime-error", "crash")


@dataclass
class Verdict:
    interesting: bool | None  # None: cannot tell (skip)
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)  # mismatch figures, failure message ...

    @property
    def label(self) -> str:
        return {True: "interesting", False: "not interesting", None: "skip"}[self.interesting]

    def to_json(self) -> dict[str, Any]:
        return {"interesting": self.interesting, "reason": self.reason, "figures": self.figures}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Verdict":
        return cls(data.get("interesting"), data.get("reason", ""), data.get("figures") or {})


def _mismatch_figures(comparison: dict[str, Any]) -> dict[str, Any]:
    keep = ("mismatches", "elements", "nan_mismatches", "max_abs_error", "max_rel_error", "message")
    figures = {k: comparison[k] for k in keep if k in comparison}
    figures["outputs"] = [{k: o.get(k) for k in ("shape", "dtype", "mismatches", "max_abs_error", "max_rel_error")}
                          for o in comparison.get("outputs", [])]
    return figures


def _failed(run: RunRecord) -> str:
    return f"{run.failure} during {run.phase or 'start-up'}: {(run.message or '')[:300]}"


def judge_outputs(spec: OracleSpec, test: RunRecord, reference: RunRecord | None) -> Verdict:
    """mismatch / recorded oracles: the comparisons replay made."""
    if test.failure:
        return Verdict(False, f"the test run failed ({_failed(test)})", {"failure": test.failure})
    if spec.kind == "mismatch":
        if reference is None:
            raise ValueError("a mismatch oracle needs a reference run")
        if reference.failure:
            return Verdict(None, f"the reference cannot run it ({_failed(reference)})", {"failure": reference.failure})
        comparisons = reference.comparisons
    else:
        comparisons = test.comparisons
    if not comparisons:
        return Verdict(None, "nothing to compare with")
    comparison = comparisons[0]
    figures = _mismatch_figures(comparison)
    if comparison.get("ok"):
        return Verdict(False, f"outputs match (max abs error {comparison.get('max_abs_error', 0):.3g})", figures)
    if comparison.get("message"):
        return Verdict(True, f"outputs differ: {comparison['message']}", figures)
    return Verdict(True, f"{comparison.get('mismatches')}/{comparison.get('elements')} elements differ "
                         f"(max abs error {comparison.get('max_abs_error', 0):.3g}, "
                         f"{comparison.get('nan_mismatches', 0)} NaN mismatches)", figures)


def judge_error(spec: OracleSpec, test: RunRecord, allow_load: bool = False) -> Verdict:
    """error oracle: a compile/runtime error or crash whose message (or log, or signal) matches."""
    if not test.failure:
        return Verdict(False, "the test run succeeded")
    if test.failure not in FAILURE_KINDS or (test.phase == "load" and not allow_load):
        return Verdict(False, f"a failure of another kind ({_failed(test)})", {"failure": test.failure})
    text = "\n".join([test.message or "", test.signal or "", *test.log_tail])
    figures = {"failure": test.failure, "phase": test.phase, "signal": test.signal, "message": (test.message or "")[:500]}
    if re.search(spec.error_regex or "", text):
        return Verdict(True, f"{test.failure} during {test.phase} matches /{spec.error_regex}/", figures)
    return Verdict(False, f"{test.failure} during {test.phase}, but /{spec.error_regex}/ does not match", figures)


def script_verdict(returncode: int | None, status: str, timeout: float | None) -> Verdict:
    """git bisect run semantics: 0 not interesting, 125 skip, 1-127 interesting; others: the script is broken."""
    if status == "timeout":
        return Verdict(None, f"the script did not finish in {timeout:g} s (skip)")
    if returncode == 0:
        return Verdict(False, "the script exited 0")
    if returncode == 125:
        return Verdict(None, "the script exited 125 (skip)")
    if returncode is not None and 1 <= returncode <= 127:
        return Verdict(True, f"the script exited {returncode}", {"exit_code": returncode})
    raise EnvironmentMissing(f"the check script ended with status {returncode} (not 0-127)",
                             hint="like git bisect run: 0 = not interesting, 1-127 = interesting, 125 = skip")


def run_script(spec: OracleSpec, module: Path, inputs: Path | None, folder: Path, env: dict[str, str],
               timeout: float | None) -> Verdict:
    """Run the script on one candidate: its HLO file is the last argument; XLATOOLS_REDUCE_HLO / _INPUTS name them."""
    from xlatools.errors import Interrupted
    from xlatools.run.process import execute

    argv = ["/bin/sh", "-c", f"{spec.script} {shlex.quote(str(module))}"]
    env = {**env, "XLATOOLS_REDUCE_HLO": str(module)}
    if inputs is not None:
        env["XLATOOLS_REDUCE_INPUTS"] = str(inputs)
    result = execute(argv, env, str(folder), folder / "script.stdout.log", folder / "script.stderr.log", timeout,
                     None, None)
    if result.status == "interrupted":
        raise Interrupted("interrupted while the check script ran")
    return script_verdict(result.returncode, result.status, timeout)
