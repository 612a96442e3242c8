"""What `bisect passes` knows about passes and steps: the passes a backend's compilation needs (left enabled
unless --include-pass), and how a step with passes disabled is judged: a crash, or any failure that is not
the test's own bad, means the disabled set broke the program. That is a skip (reason `BROKE: ...`), never bad.
"""

from __future__ import annotations

import re
from dataclasses import replace
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


def backend_of(platform: str | None) -> str:
    """The table's key for a dump's platform (cpu, sm_9.0a_gpu, ...)."""
    return "gpu" if platform and platform.endswith("gpu") else "cpu"


def known_needed(backend: str) -> dict[str, str]:
    return {name: f"needed on {backend}: {why}" for name, why in NEEDED_PASSES.get(backend, {}).items()}


def fatal_line(bundle: str | None) -> str | None:
    """The first fatal log line (a failed CHECK, an F-line) in a step's stderr, cut to 160 characters."""
    if not bundle:
        return None
    from xlatools.fsutil import tail_bytes

    text = tail_bytes(Path(bundle) / "stderr.log", 256 * 1024).decode("utf-8", "replace")
    found = next((m for pattern in _FATAL for m in [pattern.search(text)] if m is not None), None)
    if found is None:
        return None
    line = " ".join(found.group(found.lastindex or 0).split())
    return line if len(line) <= 160 else line[:157] + "..."


def broke_reason(
    outcome: StepOutcome, code: int | None, rule: Rule, baseline_code: int | None, bundle: str | None
) -> str | None:
    """Why a step with passes disabled broke the program, or None when its outcome stands:
    - bad by a signal (exit 128+N) that --bad-exit does not name: a crash is never the test's bad;
    - bad by the default exit-status test with another status than the baseline's bad one;
    - a skip of a program that failed (a crash under --match, an exit --bad-exit does not name, no metric),
      except the test's own --skip-exit codes."""
    if code in (0, None) or code in rule.skip_exit:
        return None
    crashed = code < 0 or code >= 128
    plain = not rule.bad_exit and rule.match is None and rule.metric is None
    if outcome == StepOutcome.BAD:
        if crashed and code not in rule.bad_exit:
            why = _crash(code)
        elif plain and baseline_code not in (None, 0) and code != baseline_code:
            why = f"exit {code}, not the exit {baseline_code} of the test's bad in the baseline"
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


def judge_disabled(verdict: StepVerdict, rule: Rule, baseline_code: int | None) -> StepVerdict:
    """A step's verdict with passes disabled (see `broke_reason`)."""
    code = verdict.detail.exit_code if verdict.detail else None
    why = broke_reason(verdict.outcome, code, rule, baseline_code, verdict.bundle)
    return verdict if why is None else replace(verdict, outcome=StepOutcome.SKIP, reason=why)


def rejudged(record: StepRecord, rule: Rule, baseline_code: int | None) -> StepRecord:
    """A recorded step judged again (a state written before crashes were skips called them bad)."""
    if record.reason.startswith(BROKE):
        return record
    code = record.detail.exit_code if record.detail else None
    why = broke_reason(record.outcome, code, rule, baseline_code, record.bundle)
    return record if why is None else replace(record, outcome=StepOutcome.SKIP, reason=why)


def broke(record: StepRecord) -> bool:
    return record.outcome == StepOutcome.SKIP and record.reason.startswith(BROKE)
