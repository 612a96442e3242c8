"""What `bisect passes` knows about passes and steps: the passes a backend's compilation needs (left enabled
unless --include-pass), and how a step with passes disabled is judged: a crash, or any failure that is not
the test's own bad, means the disabled set broke the program. That is a skip (reason `BROKE: ...`), never bad.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlatools.vocab import StepOutcome

if TYPE_CHECKING:
    from xlatools.bisect.engine import StepVerdict
    from xlatools.bisect.rule import Rule
    from xlatools.records.bisect import StepRecord

BROKE = "the disabled passes break the program"  # a skip whose reason starts so: not a verdict on the test

# Passes compilation needs, per backend: disabling them breaks the program rather than changing its result,
# so they are left enabled and named (--include-pass makes one a candidate again). Measured where said.
NEEDED_PASSES: dict[str, dict[str, str]] = {
    "cpu": {
        "copy-insertion": "buffer assignment needs its copies: jaxlib 0.10.2 aborts without it when an output "
        "repeats a parameter (Check failed ... Unexpected duplicate) or holds a constant (Check failed: "
        "const_instr == nullptr)",
        "sharding-remover": "the CPU has no implementation of the Sharding custom calls it removes: without it "
        "a flax model's initialisation fails on jaxlib 0.10.2 (JaxRuntimeError: NOT_FOUND: No registered "
        "implementation for untyped custom call to Sharding for Host)",
    },
    "gpu": {
        "copy-insertion": "buffer assignment needs its copies (as on the CPU; not measured on a GPU)",
    },
}

# Most telling first: a failed CHECK, then a glog/absl FATAL line's message, then a C++ abort.
_FATAL = (
    re.compile(r"Check failed: .*"),
    re.compile(r"^F\d{4} [^\]]*\] (.*)", re.M),
    re.compile(r"terminate called .*"),
)


# An error XLA raised into Python (compilation or execution failed): with an exit-status test, a failure the
# baseline's bad did not show is the disabled set breaking the program, whatever the exit status.
_XLA_ERROR = re.compile(r"^(?:[\w.]+\.)?(?:JaxRuntimeError|XlaRuntimeError): .*", re.M)


@dataclass(frozen=True)
class Baseline:
    """What the test's own bad looked like in the baseline run (all passes enabled)."""

    code: int | None = None
    xla_error: str | None = None


def baseline_of(code: int | None, bundle: str | None) -> Baseline:
    return Baseline(code, xla_error(bundle))


def backend_of(platform: str | None) -> str:
    """The table's key for a dump's platform (cpu, sm_9.0a_gpu, ...)."""
    return "gpu" if platform and platform.endswith("gpu") else "cpu"


def known_needed(backend: str) -> dict[str, str]:
    return {name: f"needed on {backend}: {why}" for name, why in NEEDED_PASSES.get(backend, {}).items()}


def _stderr(bundle: str | None) -> str:
    from xlatools.fsutil import tail_bytes

    return tail_bytes(Path(bundle) / "stderr.log", 256 * 1024).decode("utf-8", "replace") if bundle else ""


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 160 else line[:157] + "..."


def xla_error(bundle: str | None) -> str | None:
    """The last error XLA raised into Python in a step's stderr (JaxRuntimeError, XlaRuntimeError)."""
    found = _XLA_ERROR.findall(_stderr(bundle))
    return _short(found[-1]) if found else None


def fatal_line(bundle: str | None) -> str | None:
    """The first fatal log line (a failed CHECK, an F-line) in a step's stderr, cut to 160 characters."""
    text = _stderr(bundle)
    found = next((m for pattern in _FATAL for m in [pattern.search(text)] if m is not None), None)
    if found is None:
        return None
    return _short(found.group(found.lastindex or 0))


def broke_reason(
    outcome: StepOutcome, code: int | None, rule: Rule, baseline: Baseline, bundle: str | None
) -> str | None:
    """Why a step with passes disabled broke the program, or None when its outcome stands:
    - bad by a signal (exit 128+N) that --bad-exit does not name: a crash is never the test's bad;
    - bad by the default exit-status test with another status than the baseline's bad one;
    - bad by an exit-status test (default or --bad-exit) with an error XLA raised into Python
      (JaxRuntimeError: a compilation that failed) where the baseline's bad had none;
    - a skip of a program that failed (a crash under --match, an exit --bad-exit does not name, no metric),
      except the test's own --skip-exit codes."""
    if code in (0, None) or code in rule.skip_exit:
        return None
    crashed = code < 0 or code >= 128
    by_exit = rule.match is None and rule.metric is None
    if outcome == StepOutcome.BAD:
        error = xla_error(bundle) if by_exit and baseline.xla_error is None else None
        if crashed and code not in rule.bad_exit:
            why = _crash(code)
        elif by_exit and not rule.bad_exit and baseline.code not in (None, 0) and code != baseline.code:
            why = f"exit {code}, not the exit {baseline.code} of the test's bad in the baseline"
        elif error is not None:
            return f"{BROKE}: exit {code} on an error of XLA's that the baseline did not raise: {error}"
        else:
            return None
    elif outcome == StepOutcome.SKIP:
        why = _crash(code) if crashed else f"failed (exit {code})"
    else:
        return None
    fatal = fatal_line(bundle)
    return f"{BROKE}: {why}" + (f": {fatal}" if fatal else "")


def _crash(code: int) -> str:
    from xlatools.proctree import signal_name

    name = signal_name(-(code - 128) if code >= 128 else code)
    return f"crashed ({name}, exit {code})"


def judge_disabled(verdict: StepVerdict, rule: Rule, baseline: Baseline) -> StepVerdict:
    """A step's verdict with passes disabled (see `broke_reason`)."""
    code = verdict.detail.exit_code if verdict.detail else None
    why = broke_reason(verdict.outcome, code, rule, baseline, verdict.bundle)
    return verdict if why is None else replace(verdict, outcome=StepOutcome.SKIP, reason=why)


def rejudged(record: StepRecord, rule: Rule, baseline: Baseline) -> StepRecord:
    """A recorded step judged again (a state written before crashes were skips called them bad)."""
    if record.reason.startswith(BROKE):
        return record
    code = record.detail.exit_code if record.detail else None
    why = broke_reason(record.outcome, code, rule, baseline, record.bundle)
    return record if why is None else replace(record, outcome=StepOutcome.SKIP, reason=why)


def broke(record: StepRecord) -> bool:
    return record.outcome == StepOutcome.SKIP and record.reason.startswith(BROKE)
