"""Processes: a target interpreter that hangs in its probe (and its children), SIGTERM and SIGINT
during the first probe and during the program, --timeout with children that left the session,
programs that cannot be read, and user-code errors that must not show xlatools' own frames."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from .core import Case, Run, marked_processes

CLS = "processes"
PROBE_TIMEOUT = {"XLATOOLS_PROBE_TIMEOUT_S": "3"}
TARGETS = {
    "run": ["run", "{ok}", "--out", "out"],
    "doctor": ["doctor"],
    "replay": ["replay", "{hlo}", "--out", "out"],
    "lower": ["lower", "lowerme.py:f", "--input-shapes", '[("x", "f32[2]")]'],
    "repro-run": ["repro", "run", "{pack}", "--out", "out"],
    "bisect-passes": ["bisect", "passes", "--out", "bis", "--", "{ok}"],
}


def _lowerme(run: Run) -> None:
    run.write("lowerme.py", "def f(x):\n    return x * 2\n")


def _signal_when(sig: int, marker: str, settle: float = 0.5, limit: float = 60):
    """Send `sig` to the CLI once a process of this case runs `marker` (e.g. the slow probe's sleep)."""

    def action(run: Run, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:  # never poll(): the harness reaps the CLI itself (os.wait4)
            if any(marker in cmd for _, cmd in marked_processes(run.token)):
                time.sleep(settle)
                os.kill(proc.pid, sig)  # a zombie (already exited) ignores it
                return
            time.sleep(0.05)

    return action


def _with_python(argv: list[str], python: str) -> list[str]:
    at = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:at], "--python", python, *argv[at:]]


def _bisect_stopped(run: Run, result) -> list[str]:
    problems = []
    for state in run.path("bis").glob("*/bisect.json"):
        status = json.loads(state.read_text()).get("status")
        if status == "running":
            problems.append("bisect.json left 'running'")
    return problems


def cases() -> list[Case]:
    out = []
    for name, argv in TARGETS.items():
        setup = _lowerme if name == "lower" else None
        expect = {1, 3} if name == "doctor" else {3}
        out.append(
            Case(
                CLS,
                f"probe-hangs-{name}",
                _with_python(argv, "{hang_python}"),
                frozenset(expect),
                setup,
                env=PROBE_TIMEOUT,
                cold_cache=True,
                timeout=60,
                max_seconds=40,
                mention=("hang_python",),
            )
        )
        for sig in (signal.SIGTERM, signal.SIGINT):
            out.append(
                Case(
                    CLS,
                    f"{sig.name.lower()}-in-first-probe-{name}",
                    _with_python(argv, "{slow_python}"),
                    frozenset({130}),
                    setup,
                    cold_cache=True,
                    timeout=60,
                    max_seconds=40,
                    action=_signal_when(sig, "sleep 30"),
                    check=_bisect_stopped,
                )
            )
    for sig in (signal.SIGTERM, signal.SIGINT):
        out.append(
            Case(
                CLS,
                f"{sig.name.lower()}-in-program-run",
                ["run", "{setsid_child}", "--out", "out"],
                frozenset({130}),
                action=_signal_when(sig, "sleep 300"),
                timeout=60,
            )
        )
        out.append(
            Case(
                CLS,
                f"{sig.name.lower()}-in-bisect-step",
                ["bisect", "passes", "--out", "bis", "--", "{setsid_child}"],
                frozenset({130}),
                action=_signal_when(sig, "sleep 300"),
                timeout=60,
                check=_bisect_stopped,
            )
        )
    out += [
        Case(
            CLS,
            "timeout-kills-setsid-children",
            ["run", "{setsid_child}", "--out", "out", "--timeout", "3"],
            frozenset({124}),
            timeout=60,
            max_seconds=30,
        ),
        Case(
            CLS,
            "timeout-program-ignores-term",
            ["run", "{ignore_term}", "--out", "out", "--timeout", "2"],
            frozenset({124}),
            timeout=60,
            max_seconds=30,
        ),
        Case(
            CLS,
            "program-unreadable",
            ["run", "prog.py", "--out", "out"],
            frozenset({2}),
            lambda r: r.write("prog.py", "print('ran')\n", mode=0o000),
            wrapper="no-dac",
            mention=("prog.py",),
            absent=("out",),
        ),
        Case(
            CLS,
            "program-unreadable-module-folder",
            ["run", "pkg", "--out", "out"],
            frozenset({2}),
            lambda r: (r.write("pkg/__main__.py", "print('ran')\n", mode=0o000), r.path("pkg").chmod(0o700)),
            wrapper="no-dac",
            mention=("pkg",),
            absent=("out",),
        ),
        Case(
            CLS,
            "program-is-folder-without-main",
            ["run", "adir", "--out", "out"],
            frozenset({2}),
            lambda r: r.path("adir").mkdir(),
            mention=("adir",),
            absent=("out",),
        ),
        Case(
            CLS,
            "program-is-fifo",
            ["run", "p.py", "--out", "out"],
            frozenset({2}),
            lambda r: r.fifo("p.py"),
            mention=("p.py",),
            timeout=30,
            absent=("out",),
        ),
        Case(
            CLS,
            "program-dangling-link",
            ["run", "p.py", "--out", "out"],
            frozenset({2}),
            lambda r: r.path("p.py").symlink_to("nowhere.py"),
            mention=("p.py",),
            absent=("out",),
        ),
        Case(
            CLS,
            "python-false",
            ["run", "{ok}", "--python", "/bin/false", "--out", "out"],
            frozenset({2, 3}),
            cold_cache=True,
            mention=("/bin/false",),
        ),
        Case(
            CLS,
            "python-not-executable",
            ["run", "{ok}", "--python", "/etc/hostname", "--out", "out"],
            frozenset({2}),
            mention=("/etc/hostname",),
        ),
        Case(
            CLS,
            "python-without-jax",
            ["run", "{ok}", "--python", "/usr/bin/python3", "--out", "out"],
            frozenset({3}),
            cold_cache=True,
            mention=("jax",),
        ),
        Case(
            CLS,
            "lower-user-error",
            ["lower", "bad.py:f", "--input-shapes", '[("x", "f32[2]")]'],
            frozenset({1, 2}),
            lambda r: r.write("bad.py", "def f(x):\n    raise ValueError('boom in user code')\n"),
            mention=("boom in user code",),
            forbid=("probes/lower.py", "xlatools/run/probes"),
        ),
        Case(
            CLS,
            "lower-user-import-error",
            ["lower", "bad.py:f", "--input-shapes", '[("x", "f32[2]")]'],
            frozenset({1, 2}),
            lambda r: r.write("bad.py", "import no_such_module_zz\ndef f(x):\n    return x\n"),
            mention=("no_such_module_zz",),
            forbid=("probes/lower.py", "xlatools/run/probes"),
        ),
    ]
    return out
