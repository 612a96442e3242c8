"""Round 3 (issue 33): the commands added last, by what went wrong. Each case belongs to one of the
issue's classes: writes through links, state left wrong by an interrupted or failed run, processes left
behind, output that grows without bound, tracebacks, waits without a bound, messages that do not say
what is wrong, and things half-written or leaked."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from . import fixtures
from .cases_debug import _tree, setup_argv
from .cases_processes import _signal_when
from .cases_reduce import reduce_argv, triage_argv
from .core import Case, Run

CLASSES = ("links", "state", "leftovers", "growth", "tracebacks", "waits", "messages", "leaks")
# An oracle that leaves a daemon behind on every call (it must end with the reduction).
DAEMON_SINE = "#!/bin/sh\n(sleep 300 &)\nfor hlo; do :; done\ngrep -q ' sine(' \"$hlo\" && exit 1\nexit 0\n"
# An oracle that prints 30 MB per call.
LOUD_SINE = (
    "#!/bin/sh\nhead -c 30000000 /dev/zero | tr '\\0' 'x'\nfor hlo; do :; done\n"
    "grep -q ' sine(' \"$hlo\" && exit 1\nexit 0\n"
)
# An oracle killed by a signal (SIGKILL) on every call.
KILLED_ORACLE = "#!/bin/sh\nkill -9 $$\n"
NOT_UTF8 = "caf\udce9"  # a file name byte 0xE9 that is not UTF-8, as os.fsdecode gives it


def _script(name: str, text: str):
    def setup(run: Run) -> None:
        run.write(name, text, mode=0o755)

    return setup


def _link_to_outside(rel: str, folder: bool = False):
    def setup(run: Run) -> None:
        _tree(run)
        outside = run.path("outside")
        if folder:
            outside.mkdir()
            (outside / "launch.json").write_text('{"configurations": []}')
        else:
            outside.write_text('{"configurations": []}')
        link = run.path(rel)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(outside)

    return setup


def _count_configurations(run: Run, result) -> list[str]:
    text = run.path("ws/.vscode/launch.json").read_text()
    names = re.findall(r'"name":\s*"([^"]*)"', text)
    return [] if len(names) == len(set(names)) == 2 else [f"launch.json holds {len(names)} configurations: {names}"]


def _twice(argv: list[str]):
    """The tree, and one run of `argv` before the case's own (which is the second)."""

    def setup(run: Run) -> None:
        _tree(run)
        subprocess.run(
            [*run.ctx.cli, *[run.fmt(a) for a in argv]], cwd=run.dir, env=run.env, capture_output=True, timeout=120
        )

    return setup


def _link_cases() -> list[Case]:
    def case(name, rel, folder=False):
        return Case(
            "links",
            name,
            setup_argv(),
            frozenset({2}),
            _link_to_outside(rel, folder),
            unchanged=("outside",),
            mention=("symbolic link",),
            timeout=60,
        )

    return [
        case("debug-setup-launch-json-is-a-link", "ws/.vscode/launch.json"),
        case("debug-setup-vscode-folder-is-a-link", "ws/.vscode", folder=True),
        case("debug-setup-gdbinit-is-a-link", "ws/.xlatools/gdbinit"),
        Case(
            "links",
            "debug-setup-twice-is-idempotent",
            setup_argv(),
            frozenset({0}),
            _twice(setup_argv()),
            check=_count_configurations,
            timeout=120,
        ),
    ]


def _issue_links_resolve(run: Run, result) -> list[str]:
    problems = []
    for issue in run.dir.rglob("ISSUE.md"):
        for target in re.findall(r"\]\(([^)#\s]+)\)", issue.read_text()):
            if "://" not in target and not (issue.parent / target).exists():
                problems.append(f"{issue.relative_to(run.dir)} links to {target}, which does not exist")
    return problems


def _no_running_manifest(run: Run, result) -> list[str]:
    problems = []
    for manifest in run.dir.rglob("manifest.json"):
        try:
            status = json.loads(manifest.read_text()).get("status")
        except ValueError:
            problems.append(f"{manifest.relative_to(run.dir)} is not readable JSON")
            continue
        if status == "running":
            problems.append(f"{manifest.relative_to(run.dir)} left running")
    return problems


def _big_module(run: Run) -> None:
    """A 5,000-instruction module: a reduction that cannot finish inside a short --max-time."""
    lines = ["HloModule big", "", "ENTRY main {", "  p = f32[8] parameter(0)", "  v0 = f32[8] sine(p)"]
    lines += [f"  v{i} = f32[8] add(v{i - 1}, p)" for i in range(1, 5000)]
    lines += ["  ROOT r = f32[8] sine(v4999)", "}"]
    run.write("big.txt", "\n".join(lines) + "\n")


def _state_cases() -> list[Case]:
    slow = "#!/bin/sh\nsleep 300\n"
    return [
        Case(
            "state",
            "sigint-during-reduce",
            reduce_argv("out", "--jobs", "1")[:3] + ["{dir}/slow.sh", "--out", "out"],
            frozenset({130}),
            _script("slow.sh", slow),
            action=_signal_when(signal.SIGINT, "slow.sh", settle=1.0),
            check=_no_running_manifest,
            timeout=90,
        ),
        Case(
            "state",
            "reduce-max-time-on-a-big-module",
            ["reduce", "big.txt", "--script", "{still_sine}", "--out", "out", "--max-time", "3", "--rechecks", "1"],
            frozenset({0, 1}),
            _big_module,
            check=_no_running_manifest,
            timeout=240,
        ),
        Case(
            "state",
            "reduce-fresh-starts-over",
            [*reduce_argv("out"), "--fresh"],
            frozenset({0}),
            _twice(reduce_argv("out")),
            forbid=("resum",),
            timeout=240,
        ),
        Case(
            "state",
            "triage-json-empty",
            triage_argv("tri"),
            frozenset({2}),
            _triage_json(""),
            mention=("triage.json",),
            forbid=("JSONDecodeError",),
            timeout=60,
        ),
        Case(
            "state",
            "triage-json-damaged",
            triage_argv("tri"),
            frozenset({2}),
            _triage_json('{"stages": [1, '),
            mention=("triage.json",),
            forbid=("JSONDecodeError",),
            timeout=60,
        ),
        Case(
            "state",
            "triage-refused-python-leaves-no-folder",
            ["triage", "--good", "0.4.30", "--bad", "0.4.31", "--python-version", "3.99", "--out", "tri", "--", "{ok}"],
            frozenset({2, 3}),
            check=_no_triage_folder,
            timeout=60,
        ),
        Case(
            "state",
            "reduce-issue-md-links-resolve",
            reduce_argv("out"),
            frozenset({0}),
            check=_issue_links_resolve,
            timeout=180,
        ),
    ]


def _triage_json(text: str):
    def setup(run: Run) -> None:
        fixtures.copy(run.ctx.paths["triage_root"], run.path("tri"))
        run.write(f"tri/{run.ctx.paths['triage_folder']}/triage.json", text)

    return setup


def _no_triage_folder(run: Run, result) -> list[str]:
    left = [p.name for p in run.path("tri").glob("*")] if run.path("tri").exists() else []
    return [f"a refused triage left {left}"] if left else []


def _leftover_cases() -> list[Case]:
    return [
        Case(
            "leftovers",
            "debug-setup-leaves-no-bazel-server",
            ["debug", "setup", "--source", "jax", "--workspace", "ws", "--python", "{python}"],
            frozenset({0}),
            _tree,
            timeout=120,
        ),
        Case(
            "leftovers",
            "reduce-oracle-leaves-a-daemon",
            ["reduce", "{hlo}", "--script", "{dir}/d.sh", "--out", "out", "--rechecks", "1"],
            frozenset({0}),
            _script("d.sh", DAEMON_SINE),
            timeout=180,
        ),
        Case(
            "leftovers",
            "run-processes-leave-a-daemon",
            ["run", "{dir}/bg.py", "--processes", "3", "--out", "out"],
            frozenset({0}),
            _script("bg.py", "import subprocess\nsubprocess.Popen(['sleep', '300'])\n"),
            timeout=120,
        ),
    ]


def _folder_under(limit_mb: int):
    def check(run: Run, result) -> list[str]:
        size = (
            sum(p.stat().st_size for p in run.path("out").rglob("*") if p.is_file()) if run.path("out").exists() else 0
        )
        return [] if size <= limit_mb << 20 else [f"out/ holds {size >> 20} MiB (more than {limit_mb})"]

    return check


def _growth_cases() -> list[Case]:
    return [
        Case(
            "growth",
            "reduce-oracle-prints-megabytes",
            ["reduce", "{hlo}", "--script", "{dir}/loud.sh", "--out", "out", "--rechecks", "1"],
            frozenset({0}),
            _script("loud.sh", LOUD_SINE),
            check=_folder_under(16),
            timeout=240,
        )
    ]


def _wrong_lock(shape: str):
    def setup(run: Run) -> None:
        lock = json.loads(Path(run.ctx.paths["lock"]).read_text())
        if shape == "deps-string":
            lock["dependencies"] = "xla"
        elif shape == "dep-string":
            lock["dependencies"]["xla"] = "abc"
        elif shape == "commit-number":
            lock["dependencies"]["xla"]["commit"] = 12345
        elif shape == "urls-string":
            lock["dependencies"]["xla"]["urls"] = "https://example.invalid/x.tar.gz"
        run.write("xlatools.lock", json.dumps(lock))
        fixtures.copy(run.ctx.paths["tree"], run.path("jax"))

    return setup


def _odd_name(kind: str):
    def setup(run: Run) -> None:
        name = os.fsencode(str(run.dir / NOT_UTF8))
        if kind == "program":
            with open(name + b".py", "wb") as handle:
                handle.write(b"print('ok')\n")
        elif kind == "module":
            shutil.copy(run.ctx.paths["hlo"], name + b".txt")

    return setup


def _traceback_cases() -> list[Case]:
    out = []
    for shape in ("deps-string", "dep-string", "commit-number", "urls-string"):
        out.append(
            Case(
                "tracebacks",
                f"pin-verify-lock-{shape}",
                ["pin", "verify", "--source", "jax", "--lock", "xlatools.lock"],
                frozenset({1, 2}),
                _wrong_lock(shape),
                mention=("xlatools.lock",),
            )
        )
        out.append(
            Case(
                "tracebacks",
                f"build-dry-run-lock-{shape}",
                ["build", "--profile", "dbg-cpu", "--source", "jax", "--lock", "xlatools.lock", "--dry-run"],
                frozenset({2}),
                _wrong_lock(shape),
                mention=("xlatools.lock",),
            )
        )
    out += [
        Case(
            "tracebacks",
            "run-program-name-not-utf8",
            ["run", NOT_UTF8 + ".py", "--out", "out"],
            frozenset({0}),
            _odd_name("program"),
        ),
        Case("tracebacks", "run-out-not-utf8", ["run", "{ok}", "--out", NOT_UTF8], frozenset({0, 2})),
        Case(
            "tracebacks",
            "replay-module-name-not-utf8",
            ["replay", NOT_UTF8 + ".txt", "--out", "out"],
            frozenset({0}),
            _odd_name("module"),
            timeout=120,
        ),
    ]
    return out


def _wait_cases() -> list[Case]:
    return [
        Case(
            "waits",
            "doctor-python-hangs",
            ["doctor", "--python", "{hang_python}"],
            frozenset({1, 2, 3}),
            env={"XLATOOLS_PROBE_TIMEOUT_S": "5"},
            mention=("hang_python",),
            max_seconds=30,
            timeout=60,
        )
    ]


def _message_cases() -> list[Case]:
    return [
        Case(
            "messages",
            "replay-module-unknown",
            ["replay", "{run}", "--module", "no_such_module_zz", "--out", "out"],
            frozenset({2}),
            mention=("no_such_module_zz",),
            absent=("out",),
        ),
        Case(
            "messages",
            "replay-inputs-not-npz",
            ["replay", "{hlo}", "--inputs", "in.npz", "--out", "out"],
            frozenset({2}),
            lambda r: r.write("in.npz", "these are not arrays"),
            mention=("in.npz",),
        ),
        Case(
            "messages",
            "reduce-oracle-killed-by-a-signal",
            ["reduce", "{hlo}", "--script", "{dir}/k.sh", "--out", "out"],
            frozenset({2, 3}),
            _script("k.sh", KILLED_ORACLE),
            mention=("SIGKILL",),
            timeout=120,
        ),
        Case(
            "messages",
            "debug-gdb-not-a-debugger",
            ["debug", "run", "{ok}", "--break", "x", "--out", "out"],
            frozenset({3}),
            env={"XLATOOLS_GDB": "/bin/true"},
            mention=("/bin/true",),
            timeout=60,
        ),
        Case(
            "messages",
            "tmpdir-not-writable",
            ["run", "{ok}", "--out", "out"],
            frozenset({0, 3}),
            env={"TMPDIR": "/proc/no-such-tmp"},
            timeout=60,
            check=lambda run, result: (
                [] if result.exit == 0 or "/proc/no-such-tmp" in result.stderr else ["message does not name the TMPDIR"]
            ),
        ),
    ]


def _build_without_image(run: Run) -> None:
    fixtures.copy(run.ctx.paths["tree"], run.path("jax"))
    run.write("p.yaml", "extends: base\nbuild:\n  container:\n    base_image: xlatools-hostile-missing:zz\n")


def _leak_cases() -> list[Case]:
    return [
        Case(
            "leaks",
            "build-refused-writes-nothing",
            ["build", "--source", "jax", "--profile", "p.yaml"],
            frozenset({2, 3}),
            _build_without_image,
            absent=("jax/.bazelrc.user", "artifacts"),
            timeout=120,
        ),
        Case(
            "leaks",
            "repro-pack-flag-with-machine-path",
            ["repro", "pack", "{run}", "-o", "p.tar.gz", "--xla-flag", "--xla_dump_to={dir}/somewhere", "--out", "out"],
            frozenset({0, 2}),
            timeout=120,
            check=_pack_runs_or_refused,
        ),
    ]


def _pack_runs_or_refused(run: Run, result) -> list[str]:
    if result.exit == 2:
        return []
    done = subprocess.run(
        [*run.ctx.cli, "repro", "run", "p.tar.gz", "--out", "again"],
        cwd=run.dir,
        env=run.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [] if done.returncode in (0, 1) else [f"its own repro run refuses it (exit {done.returncode})"]


def cases() -> list[Case]:
    return [
        *_link_cases(),
        *_state_cases(),
        *_leftover_cases(),
        *_growth_cases(),
        *_traceback_cases(),
        *_wait_cases(),
        *_message_cases(),
        *_leak_cases(),
    ]
