"""The private rc of a build with remote credentials, through the real CLI without bazel (about 2 s):
a `build.command` that prints the rc it is given and fails. The rc exists while the build runs,
its values are hidden in the log and the error, the folder is gone when the build has failed, and
the bundle records the failure and bazel's counts from the log, read back through the one reader."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.building.build_helpers import run_build

from xlatools.records import read_bundle
from xlatools.redact import REDACTED

TOKEN = "tok-private-rc-5829"
# Prints the file named by `--bazelrc=FILE` (no braces: they are the template's placeholders), then
# bazel's summary line, and fails as a build would.
SCRIPT = (
    'cat "$(echo "$1" | cut -d= -f2-)"; ls -ld "$(dirname "$(echo "$1" | cut -d= -f2-)")"; '
    'echo "INFO: 3 processes: 2 remote cache hit, 1 internal."; exit 7'
)


def _team(tmp_path: Path, script: str) -> Path:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tmp").mkdir()
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "team.yaml").write_text(
        "extends: dbg-cpu\nbazel:\n  remote_cache: grpc://127.0.0.1:9\n"
        "  remote_credentials:\n    headers: {Authorization: {file: token}}\n"
        f"build:\n  command: [sh, -c, '{script}', sh, '{{bazel_startup_options}}']\n"
    )
    return tmp_path / "tree"


def test_the_rc_lives_while_the_build_runs_and_its_values_stay_hidden(tmp_path):
    tree = _team(tmp_path, SCRIPT)
    done = run_build(
        tree, str(tmp_path / "team.yaml"), tmp_path / "cache", "--local", env={"TMPDIR": str(tmp_path / "tmp")}
    )

    assert done.proc.returncode == 1, done.proc.stderr[-2000:]  # the build failed
    log = (done.bundle / "build.log").read_text()
    assert f"build:xlatools --remote_header=Authorization={REDACTED}" in log  # the rc was there, its value hidden
    assert "drwx------" in log  # in a folder only this user may enter
    assert TOKEN not in log + done.proc.stdout + done.proc.stderr + (done.bundle / "manifest.json").read_text()
    record = read_bundle(done.bundle, kinds=("build",))
    assert (record.status, record.exit_code, record.returncode) == ("failed", 1, 7)
    assert (record.bazel_processes.cache_hits, record.bazel_processes.actions) == (2, 2)
    assert record.plan.credentials.headers[0][1].file == str(tmp_path / "token")
    assert record.plan.private_rc.startswith(str(tmp_path / "tmp"))
    assert not Path(record.plan.private_rc).parent.exists()  # removed when the build ended


def test_sigterm_during_the_build_removes_the_rc(tmp_path):
    tree = _team(tmp_path, "sleep 60")
    env = {
        **os.environ,
        "TMPDIR": str(tmp_path / "tmp"),
        "XLATOOLS_CACHE_DIR": str(tmp_path / "cache"),
        "NO_COLOR": "1",
    }
    env.pop("XLATOOLS_PROFILE_PATH", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "xlatools",
            "build",
            "--profile",
            str(tmp_path / "team.yaml"),
            "--source",
            str(tree),
            "--out",
            str(tmp_path / "out"),
            "--local",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "tmp").glob("xlatools-*/*/remote.bazelrc")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # the command has started
        proc.send_signal(signal.SIGTERM)  # as CI cancels a job
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    assert not list((tmp_path / "tmp").glob("xlatools-*/*"))  # the rc's folder is gone
    record = read_bundle((tmp_path / "out" / "latest").resolve(), kinds=("build",))
    assert record.status == "interrupted" and record.bazel_processes is None
