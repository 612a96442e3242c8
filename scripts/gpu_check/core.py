"""What every GPU check section shares: running the CLI, recording checks with their numbers.

A section is a module of this package with `TITLE`, `BUDGET_S` (seconds it may take) and
`run(ctx: Context) -> None`; it calls `ctx.check(...)` / `ctx.skip(...)` once per check. The driver
(`__main__.py`) gives each section a Context, stops asking for more once the budget is spent, and
writes the results as JSON and as the Markdown of docs/gpu.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class CheckResult:
    section: str
    name: str
    status: str  # pass, fail, skip, error
    detail: str = ""
    numbers: dict[str, float | int | str] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class CliResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def tail(self, lines: int = 12) -> str:
        text = (self.stdout + ("\n" + self.stderr if self.stderr else "")).strip().splitlines()
        return "\n".join(text[-lines:])


class Context:
    """One section's view: where to work, how to call xlatools, where results go."""

    def __init__(self, section: str, platform: str, work: Path, results: list[CheckResult], deadline: float):
        self.section = section
        self.platform = platform  # gpu on the device machine; cpu to exercise a section here
        self.work = work
        self.python = sys.executable
        self._results = results
        self._deadline = deadline
        self._started = time.monotonic()

    @property
    def on_gpu(self) -> bool:
        return self.platform == "gpu"

    def seconds_left(self) -> float:
        return self._deadline - time.monotonic()

    def time_for(self, name: str, seconds: float) -> bool:
        """Whether a check that takes about `seconds` (on the GPU machine) still fits: one that cannot finish
        inside the budget is skipped, saying so, rather than failed by its timeout."""
        if self.seconds_left() >= seconds:
            return True
        self.skip(name, f"{self.seconds_left():.0f} s left in the section's budget; it needs about {seconds:.0f} s")
        return False

    def cli(
        self, *args: str, timeout: float = 240, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> CliResult:
        """Run `python -m xlatools ARGS` from the repository, bounded by `timeout` and the section's budget."""
        limit = max(5.0, min(timeout, self.seconds_left()))
        full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
        argv = [self.python, "-m", "xlatools", *args]
        start = time.monotonic()
        try:
            done = subprocess.run(
                argv, cwd=cwd or self.work, env=full_env, capture_output=True, text=True, timeout=limit
            )
            result = CliResult(list(args), done.returncode, done.stdout, done.stderr, time.monotonic() - start)
        except subprocess.TimeoutExpired as expired:
            out = (
                expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
            )
            result = CliResult(
                list(args), 124, out, f"(gpu-check: stopped after {limit:.0f} s)", time.monotonic() - start
            )
        return result

    def python_run(self, script: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None) -> CliResult:
        """Run a Python file with this interpreter (a program under test, a probe)."""
        limit = max(5.0, min(timeout, self.seconds_left()))
        start = time.monotonic()
        try:
            done = subprocess.run(
                [self.python, script, *args],
                cwd=self.work,
                capture_output=True,
                text=True,
                timeout=limit,
                env={**os.environ, **(env or {})},
            )
            return CliResult([script, *args], done.returncode, done.stdout, done.stderr, time.monotonic() - start)
        except subprocess.TimeoutExpired:
            return CliResult(
                [script, *args], 124, "", f"(gpu-check: stopped after {limit:.0f} s)", time.monotonic() - start
            )

    def check(self, name: str, passed: bool, detail: str = "", **numbers: float | int | str) -> bool:
        self._record(name, "pass" if passed else "fail", detail, numbers)
        return passed

    def skip(self, name: str, reason: str) -> None:
        self._record(name, "skip", reason, {})

    def _record(self, name: str, status: str, detail: str, numbers: dict) -> None:
        elapsed = time.monotonic() - self._started
        self._results.append(CheckResult(self.section, name, status, detail.strip(), numbers, round(elapsed, 1)))
        print(f"[{self.section}] {status:5} {name} {numbers if numbers else ''}", flush=True)
        self._started = time.monotonic()


def parse_json(result: CliResult) -> dict:
    """The JSON document a `--json` command printed (empty when it printed none)."""
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def flax_python(ctx: Context) -> str | None:
    """An interpreter that has flax and optax: this one (the GPU machine's), or here a corpus venv."""
    candidates = [ctx.python] + [
        os.environ.get(v, "") for v in ("XLATOOLS_CORPUS_0_12_PYTHON", "XLATOOLS_CORPUS_0_10_2_PYTHON")
    ]
    for python in candidates:
        if python and os.path.exists(python):
            done = subprocess.run([python, "-c", "import flax, optax"], capture_output=True, timeout=60)
            if done.returncode == 0:
                return python
    return None
