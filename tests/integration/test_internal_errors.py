"""A bug in xlatools (an exception no error class names) is exit 70 with a crash log, never exit 1.

The fault is injected from outside: `python -c` replaces one function a command family calls with
one that raises, then runs the real CLI entry point (`cli.entry`, as the console script does). No
hook in xlatools itself reads a test variable: production code stays as it ships, and the fault
goes exactly where a real bug would be (inside the command, below its error handling).
Each case costs well under a second except `run` (about one: it probes the target interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import bundles, manifest

EXIT_INTERNAL = 70
TOKEN = "injected-fault-4711"

HARNESS = f"""
import functools, importlib, sys
target, argv = sys.argv[1], sys.argv[2:]
module, _, path = target.partition(":")
owner = importlib.import_module(module)
*parents, name = path.split(".")
for parent in parents:
    owner = getattr(owner, parent)
def boom(*args, **kwargs):
    raise RuntimeError("{TOKEN}")
setattr(owner, name, boom)
sys.argv = ["xlatools", *argv]
from xlatools.cli import entry
entry()
"""


def _cli(tmp_path: Path, target: str, *argv: str, debug: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "XLATOOLS_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("XLATOOLS_DEBUG", None)
    command = [sys.executable, "-c", HARNESS, target, *(["--debug"] if debug else []), *argv]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "model.hlo.txt").write_text("HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    (tmp_path / "build.log").write_text("ERROR: no such package\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "xlatools.lock").write_text("{}")
    return {}


# One case per command family: (family, the function replaced, the command line).
CASES = [
    ("run", "xlatools.bundle:BundleSession.save", ["run", "smoke:dot", "--dump", "--out", "art"]),
    ("replay", "xlatools.replay.execute:prepare", ["replay", "model.hlo.txt", "--out", "art"]),
    ("bisect", "xlatools.bisect.api:bisect_passes", ["bisect", "passes", "--out", "art", "--", "true"]),
    ("reduce", "xlatools.reduce.execute:prepare", ["reduce", "model.hlo.txt", "--error", "x", "--out", "art"]),
    ("build/pin", "xlatools.pin.lock:load_lock", ["pin", "apply", "--source", "src", "--lock", "xlatools.lock"]),
    ("inspect/diff/report", "xlatools.run.runinfo:read_run_info", ["inspect", "src"]),
    ("doctor", "xlatools.doctor.signatures:scan_log", ["explain", "build.log"]),
    ("debug", "xlatools.commands.debug_run:catalog", ["debug", "passes"]),
    (
        "triage",
        "xlatools.triage.execute:plan_triage",
        ["triage", "--good", "0.4.30", "--bad", "0.4.31", "--dry-run", "--", "true"],
    ),
]


@pytest.mark.parametrize("family,target,argv", CASES, ids=[case[0] for case in CASES])
def test_a_bug_is_exit_70_with_a_crash_log(tmp_path, family, target, argv):
    _files(tmp_path)
    proc = _cli(tmp_path, target, *argv)
    assert proc.returncode == EXIT_INTERNAL, (family, proc.returncode, proc.stderr[-2000:])
    assert "internal error (a bug in xlatools" in proc.stderr and TOKEN in proc.stderr, proc.stderr
    assert "Traceback (most recent call last)" not in proc.stderr, proc.stderr  # only under --debug
    logs = list((tmp_path / "cache" / "crashes").glob("crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in proc.stderr, (logs, proc.stderr)
    text = logs[0].read_text()
    for part in (
        "xlatools: ",
        "python: ",
        "platform: ",
        f"command: xlatools {' '.join(argv)}",
        "Traceback (most recent call last)",
        f"RuntimeError: {TOKEN}",
        "report to: ",
    ):
        assert part in text, (part, text)


def test_the_json_twin_and_the_bundle_say_internal_error(tmp_path):
    _files(tmp_path)
    proc = _cli(tmp_path, "xlatools.bundle:BundleSession.save", "run", "smoke:dot", "--dump", "--json", "--out", "art")
    assert proc.returncode == EXIT_INTERNAL, proc.stderr[-2000:]
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "InternalError" and error["exit_code"] == EXIT_INTERNAL and TOKEN in error["message"]
    assert error["hint"].startswith("crash log: ") and Path(error["hint"].split(": ", 1)[1]).is_file()
    # the bundle the run had started records the same outcome: an error of ours, exit 70 (not 1, "failed")
    (bundle,) = bundles(tmp_path / "art")
    record = manifest(bundle)
    assert record["status"] == "error" and record["exit_code"] == EXIT_INTERNAL and TOKEN in record["error"]


def test_debug_shows_the_traceback(tmp_path):
    _files(tmp_path)
    proc = _cli(tmp_path, "xlatools.doctor.signatures:scan_log", "explain", "build.log", debug=True)
    assert proc.returncode == EXIT_INTERNAL
    assert "Traceback (most recent call last)" in proc.stderr and f"RuntimeError: {TOKEN}" in proc.stderr


def test_a_huge_message_shows_its_head_and_the_crash_log_keeps_it_whole(tmp_path):
    """A 120 kB exception message (hostile input quoted whole inside one) is not echoed whole on stderr."""
    _files(tmp_path)
    huge = TOKEN + "x" * 120_000
    harness = HARNESS.replace(f'RuntimeError("{TOKEN}")', f'RuntimeError("{TOKEN}" + "x" * 120_000)')
    env = {**os.environ, "NO_COLOR": "1", "XLATOOLS_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", harness, "xlatools.doctor.signatures:scan_log", "explain", "build.log"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_INTERNAL and TOKEN in proc.stderr
    assert len(proc.stderr) < 5_000 and "see the crash log" in proc.stderr, len(proc.stderr)
    (log,) = (tmp_path / "cache" / "crashes").glob("crash-*.log")
    assert huge in log.read_text()
